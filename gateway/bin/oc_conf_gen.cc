// oc-conf-gen: writes the shipped conf files from the config tables (oc/gateway/conf_files.h).
//
//   oc-conf-gen DIR          write DIR/objectcache.toml, storage-server.toml, gateway.toml and
//                            scheduler.toml
//   oc-conf-gen --check DIR  exit 1 naming each of them that differs from the tables, and each
//                            other file in DIR (a hand-written file there could drift)
//
// conf_test runs the check on conf/, so a table change without `oc-conf-gen conf` fails CI.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "oc/gateway/conf_files.h"

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string_view(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: oc-conf-gen [--check] DIR\n");
    return 2;
  }
  const std::string dir = argv[argc - 1];
  int differ = 0;
  const std::vector<oc::gateway::ConfFile> files = oc::gateway::ShippedConfFiles();
  if (check) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      bool generated = false;
      for (const oc::gateway::ConfFile& f : files) {
        generated = generated || f.name == name;
      }
      if (!generated) {
        std::fprintf(stderr, "oc-conf-gen: %s is not generated from the config tables\n",
                     entry.path().c_str());
        ++differ;
      }
    }
    if (ec) {
      std::fprintf(stderr, "oc-conf-gen: cannot list %s: %s\n", dir.c_str(), ec.message().c_str());
      return 1;
    }
  }
  for (const oc::gateway::ConfFile& f : files) {
    const std::string path = dir + "/" + f.name;
    if (check) {
      std::ifstream in(path, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      if (!in || text.str() != f.text) {
        std::fprintf(stderr, "oc-conf-gen: %s differs from the config tables\n", path.c_str());
        ++differ;
      }
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << f.text;
    if (!out.flush()) {
      std::fprintf(stderr, "oc-conf-gen: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return differ == 0 ? 0 : 1;
}
