#pragma once
// The shipped conf files (every file in conf/: objectcache.toml, storage-server.toml,
// gateway.toml, scheduler.toml) as the config tables generate them: each file's preamble, then
// every table its daemon or tool reads, every key at its default with its doc. oc-conf-gen
// writes them; conf_test fails when a file in conf/ differs or is not one of these, so a key
// cannot be added, renamed or re-defaulted without its files following
// (docs/decisions/config-tables.md). Target oc_conf_files (it links the storage RPC server's
// table, so neither oc-gateway nor the gateway library links it).
// Thread safety: pure.

#include <string>
#include <vector>

namespace oc::gateway {

struct ConfFile {
  std::string name;  // "objectcache.toml"
  std::string text;
};

std::vector<ConfFile> ShippedConfFiles();

}  // namespace oc::gateway
