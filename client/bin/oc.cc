// `oc`: the ObjectCache client CLI for serving nodes and operators (docs/design.md: Roles). This
// main only dispatches to a subcommand; each lives in its own bin/oc_<name>.cc.

#include <iostream>
#include <string_view>

// oc_schedule.cc: what would the scheduler do (issue 6). argv[0] is "schedule".
int RunScheduleCommand(int argc, char** argv);
// oc_kv.cc: keys, put-chunks, get-layers, probe (issue 5). argv[0] is the command.
int RunKvCommand(int argc, char** argv);

namespace {

constexpr std::string_view kUsage =
    "usage: oc <command> [flags]\n"
    "commands:\n"
    "  schedule   rates each bandwidth policy gives a set of layerwise "
    "requests\n"
    "  keys       chunk keys (object names) of a token file\n"
    "  put-chunks store N chunks in one descriptor PUT\n"
    "  get-layers descriptor GET into a buffer (UCX) or from the body (HTTP)\n"
    "  probe      how many leading chunks are present, and their sizes\n"
    "run 'oc <command> --help' for a command's flags\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string_view command = argv[1];
  if (command == "schedule") {
    return RunScheduleCommand(argc - 1, argv + 1);
  }
  if (command == "keys" || command == "put-chunks" || command == "get-layers" ||
      command == "probe") {
    return RunKvCommand(argc - 1, argv + 1);
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "oc: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
