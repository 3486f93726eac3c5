#pragma once
// The backend registry (backends.def) as data: each backend's name, folder, placement, options
// table and summary, for the code that must know the backends without linking them (options,
// the RPC client's placement). The openers are open_store.cc's (they link the backends).
// Thread safety: constant data.

#include <cstdint>
#include <string>
#include <string_view>

namespace oc::storage {

// Where a backend's objects live relative to the servers serving it (backends.def, placement).
enum class BackendPlacement : uint8_t {
  kOwnData,  // each server holds its own objects: a bucket lives on one server
  kShared,   // every server over the same target serves every bucket
};

struct BackendInfo {
  std::string_view name;    // storage.backend's value
  std::string_view folder;  // storage-server/src/<folder>/
  BackendPlacement placement;
  std::string_view options_table;  // the config table of its own keys ("storage", "rados")
  std::string_view summary;
};

inline constexpr BackendInfo kBackends[] = {
#define OC_BACKEND(id, name, folder, placement, options, summary) \
  {name, #folder, BackendPlacement::placement, options, summary},
#include "backends.def"
#undef OC_BACKEND
};

// The backend storage.backend names when the config does not say.
inline constexpr std::string_view kDefaultBackend = kBackends[0].name;

// The row named `name`, or nullptr.
inline const BackendInfo* FindBackend(std::string_view name) {
  for (const BackendInfo& b : kBackends) {
    if (b.name == name) {
      return &b;
    }
  }
  return nullptr;
}

// The names, quoted and joined for an error message: "\"rocksdb\" or \"rados\"".
inline std::string BackendNames() {
  std::string out;
  for (size_t i = 0; i < std::size(kBackends); ++i) {
    if (i > 0) {
      out += i + 1 == std::size(kBackends) ? " or " : ", ";
    }
    out += "\"" + std::string(kBackends[i].name) + "\"";
  }
  return out;
}

}  // namespace oc::storage
