// The shipped conf files from the config tables (conf_files.h).
#include "oc/gateway/conf_files.h"

#include <string_view>

#include "oc/common/config_table.h"
#include "oc/gateway/config_table.h"
#include "oc/sched/config_table.h"
#include "oc/storage/config_tables.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kEveryKey =
    "Every key is listed with its default; delete a line to keep the default. ";
constexpr std::string_view kUnknownKeys = "Unknown keys are a startup error. ";
constexpr std::string_view kGenerated =
    "Generated from the config tables by oc-conf-gen (`oc-conf-gen conf`): change a key's row, "
    "not this file (docs/decisions/config-tables.md).";

// A daemon's preamble: what reads the file, then the rules every daemon file shares.
std::string Preamble(std::string_view what) {
  return config_text::Comment(std::string(what) + std::string(kEveryKey) +
                              std::string(kUnknownKeys) + std::string(kGenerated));
}

// The local store's tables and the scheduler's, which both daemons read.
std::string StoreTables() {
  const storage::StoreOptions store;
  return storage::StorageConfigTable().Toml(store) + "\n" +
         storage::RadosConfigTable().Toml(store.rados) + "\n" +
         storage::KvConfigTable().Toml(store.kv) + "\n" +
         storage::QuotaConfigTable().Toml(store.quota) + "\n" +
         storage::CacheConfigTable().Toml(store.cache);
}

std::string SchedulerTable() {
  return sched::SchedulerConfigTable().Toml(sched::SchedulerOptions());
}

}  // namespace

std::vector<ConfFile> ShippedConfFiles() {
  constexpr std::string_view kPrecedence = "Precedence: default < this file (--config) < flags. ";
  std::vector<ConfFile> files;
  files.push_back(ConfFile{
      "objectcache.toml",
      Preamble(std::string("`objectcache serve` configuration: the gateway and the storage server "
                           "in one process. ") +
               std::string(kPrecedence)) +
          "\n" + GatewayConfigTable().Toml(GatewayOptions()) + "\n" +
          LifecycleConfigTable().Toml(LifecycleOptions()) + "\n" + StoreTables() + "\n" +
          SchedulerTable()});
  files.push_back(ConfFile{
      "storage-server.toml",
      Preamble(std::string("oc-storage-server configuration. ") + std::string(kPrecedence)) + "\n" +
          StoreTables() + "\n" +
          storage::rpc::RpcConfigTable().Toml(storage::rpc::RpcServerOptions()) + "\n" +
          SchedulerTable()});
  // oc-gateway reads only [gateway] (gateway/bin/oc_gateway.cc); storage servers are flags.
  files.push_back(ConfFile{
      "gateway.toml",
      Preamble(std::string("oc-gateway configuration; storage servers are given with --storage. ") +
               std::string(kPrecedence)) +
          "\n" + GatewayConfigTable().Toml(GatewayOptions()) + "\n" +
          LifecycleConfigTable().Toml(LifecycleOptions())});
  // `oc schedule --config` reads policy, cap_gbps and margin_gbps from [scheduler] and ignores
  // the rest (client/bin/oc_schedule.cc); the daemons read the same table from their own files.
  files.push_back(ConfFile{
      "scheduler.toml",
      config_text::Comment(
          "`oc schedule --config` input: it reads policy, cap_gbps and margin_gbps from this "
          "table (flags override them); oc-storage-server and `objectcache serve` read the whole "
          "[scheduler] table from their own files. " +
          std::string(kEveryKey) + std::string(kGenerated)) +
          "\n" + SchedulerTable()});
  return files;
}

}  // namespace oc::gateway
