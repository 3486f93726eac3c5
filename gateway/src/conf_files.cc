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
    "Every key is listed with its default; delete a line to keep the default. Unknown keys are "
    "a startup error. Generated from the config tables by oc-conf-gen (`oc-conf-gen conf`): "
    "change a key's row, not this file (docs/decisions/config-tables.md).";

// The local store's tables and the scheduler's, which both daemons read.
std::string StoreTables() {
  const storage::StoreOptions store;
  return storage::StorageConfigTable().Toml(store) + "\n" +
         storage::RadosConfigTable().Toml(store.rados) + "\n" +
         storage::KvConfigTable().Toml(store.kv);
}

std::string SchedulerTable() {
  return sched::SchedulerConfigTable().Toml(sched::SchedulerOptions());
}

}  // namespace

std::vector<ConfFile> ShippedConfFiles() {
  std::vector<ConfFile> files;
  files.push_back(ConfFile{
      "objectcache.toml",
      config_text::Comment(
          std::string("`objectcache serve` configuration: the gateway and the storage server in "
                      "one process. Precedence: default < this file (--config) < flags. ") +
          std::string(kEveryKey)) +
          "\n" + GatewayConfigTable().Toml(GatewayOptions()) + "\n" +
          LifecycleConfigTable().Toml(LifecycleOptions()) + "\n" + StoreTables() + "\n" +
          SchedulerTable()});
  files.push_back(ConfFile{
      "storage-server.toml",
      config_text::Comment(std::string("oc-storage-server configuration. Precedence: default < "
                                       "this file (--config) < flags. ") +
                           std::string(kEveryKey)) +
          "\n" + StoreTables() + "\n" +
          storage::rpc::RpcConfigTable().Toml(storage::rpc::RpcServerOptions()) + "\n" +
          SchedulerTable()});
  return files;
}

}  // namespace oc::gateway
