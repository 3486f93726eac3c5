#pragma once
// The [gateway] and [lifecycle] config tables (oc/common/config_table.h): one row per key of
// GatewayOptions. ApplyConfig and ToJson (options.h, the /stats "config" section) derive from it,
// and so do the shipped conf files (oc/gateway/conf_files.h; docs/decisions/config-tables.md).
// Thread safety: built on first use, then only read.

#include "oc/common/config_table.h"
#include "oc/gateway/options.h"

namespace oc::gateway {

const ConfigTable<GatewayOptions>& GatewayConfigTable();
// [lifecycle]: GatewayOptions::lifecycle, read by ApplyConfig after [gateway].
const ConfigTable<LifecycleOptions>& LifecycleConfigTable();

}  // namespace oc::gateway
