#pragma once
// The storage server's config tables (oc/common/config_table.h): one per options struct, one
// row per key. ApplyConfig (options.h, rpc_server.h) reads them, Validate checks their bounds,
// DescribeStore and RpcServerOptions::ToString print them, and oc-conf-gen writes the shipped
// conf files from them (docs/decisions/config-tables.md).
// Thread safety: each table is built on first use and then only read.

#include "oc/common/config_table.h"
#include "oc/storage/options.h"
#include "oc/storage/quota.h"
#include "oc/storage/rpc_server.h"

namespace oc::storage {

const ConfigTable<StoreOptions>& StorageConfigTable();  // [storage]
const ConfigTable<RadosOptions>& RadosConfigTable();    // [rados]
const ConfigTable<KvOptions>& KvConfigTable();          // [kv]
const ConfigTable<QuotaOptions>& QuotaConfigTable();    // [quota] (src/quota/quota_options.cc)
const ConfigTable<CacheOptions>& CacheConfigTable();    // [cache]

namespace rpc {
const ConfigTable<RpcServerOptions>& RpcConfigTable();  // [rpc] (target oc_storage_rpc_server)
}  // namespace rpc

}  // namespace oc::storage
