#pragma once
// Flags of the `oc` subcommands: one table per command, whose rows both parse argv and print
// `oc <command> --help`, so what is accepted and what the help lists cannot drift apart.
//
//   --name VALUE, --name=VALUE     a flag with a value (FlagSpec::value names it in the help)
//   --name                         a switch (FlagSpec::value empty)
//   --help, -h (anywhere)          ParsedFlags::help, nothing else parsed; the caller prints
//                                  HelpText()
//   anything else not "--"         a positional argument, if the command takes them
// A flag not in the table is refused (kInvalidArgument naming it), as is a value-taking flag
// at the end of argv. A row's `fallback` is what Value() returns when the flag is absent, and
// the default the help prints.
// Thread safety: plain values and pure functions.

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"

namespace oc::cli {

struct FlagSpec {
  std::string_view name;      // without the leading "--"
  std::string_view value;     // placeholder shown in the help ("FILE"); empty: a switch
  std::string_view fallback;  // used when absent and shown as the default; empty: none
  std::string_view help;      // one line
};

struct CommandSpec {
  std::string_view name;        // "get-layers"
  std::string_view summary;     // what the command does, one line
  std::string_view positional;  // e.g. "REQUESTS.json"; empty: no positional arguments
  std::vector<FlagSpec> flags;
  std::vector<std::string_view> examples;  // whole command lines
  std::string_view notes;                  // more text after the flags; may be empty
};

class ParsedFlags {
 public:
  // The value given on the command line, else nullptr.
  const std::string* Given(std::string_view name) const;
  // The value given, else the table's fallback ("" when the row has none).
  std::string Value(std::string_view name) const;
  bool Switch(std::string_view name) const { return switches_.count(std::string(name)) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool help() const { return help_; }

 private:
  friend Result<ParsedFlags> ParseFlags(const CommandSpec& spec, int argc, char** argv);
  const CommandSpec* spec_ = nullptr;
  std::map<std::string, std::string, std::less<>> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// Parses argv[1..argc) (argv[0] is the command name) against `spec`. kInvalidArgument naming
// the flag: unknown, missing its value, or a positional argument where none is taken.
// REQUIRES: `spec` outlives the result.
Result<ParsedFlags> ParseFlags(const CommandSpec& spec, int argc, char** argv);

// "usage: oc <name> [flags] <positional>", the summary, one line per flag with its value
// placeholder, help and default, the notes, then the examples.
std::string HelpText(const CommandSpec& spec);

}  // namespace oc::cli
