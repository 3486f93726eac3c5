// oc-conf-gen: writes the shipped conf files from the config tables (oc/gateway/conf_files.h).
//
//   oc-conf-gen DIR          write DIR/objectcache.toml and DIR/storage-server.toml
//   oc-conf-gen --check DIR  exit 1 naming each file in DIR that differs from the tables
//
// conf_test runs the check on conf/, so a table change without `oc-conf-gen conf` fails CI.

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "oc/gateway/conf_files.h"

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string_view(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: oc-conf-gen [--check] DIR\n");
    return 2;
  }
  const std::string dir = argv[argc - 1];
  int differ = 0;
  for (const oc::gateway::ConfFile& f : oc::gateway::ShippedConfFiles()) {
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
