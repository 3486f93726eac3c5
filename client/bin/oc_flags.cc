// The `oc` flag tables: parsing and help text from the same rows (oc_flags.h).
#include "oc_flags.h"

#include <algorithm>

#include <fmt/core.h>

namespace oc::cli {
namespace {

const FlagSpec* Find(const CommandSpec& spec, std::string_view name) {
  for (const FlagSpec& f : spec.flags) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

}  // namespace

const std::string* ParsedFlags::Given(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::string ParsedFlags::Value(std::string_view name) const {
  if (const std::string* v = Given(name)) {
    return *v;
  }
  const FlagSpec* row = spec_ != nullptr ? Find(*spec_, name) : nullptr;
  return row != nullptr ? std::string(row->fallback) : std::string();
}

Result<ParsedFlags> ParseFlags(const CommandSpec& spec, int argc, char** argv) {
  ParsedFlags f;
  f.spec_ = &spec;
  // --help wins wherever it stands, so a user who asks for help gets it, not an error
  // about the flags around it.
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      f.help_ = true;
      return f;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      if (spec.positional.empty()) {
        return Status::InvalidArgument(std::string(arg),
                                       fmt::format("unexpected argument '{}'", arg));
      }
      f.positional_.emplace_back(arg);
      continue;
    }
    std::string_view name = arg.substr(2);
    std::string_view inline_value;
    const size_t eq = name.find('=');
    if (eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* row = Find(spec, name);
    if (row == nullptr) {
      return Status::InvalidArgument(
          fmt::format("--{}", name),
          fmt::format("unknown flag --{} (oc {} --help)", name, spec.name));
    }
    if (row->value.empty()) {
      if (eq != std::string_view::npos) {
        return Status::InvalidArgument(fmt::format("--{}", name),
                                       fmt::format("--{} is a switch: it takes no value", name));
      }
      f.switches_.insert(std::string(name));
      continue;
    }
    if (eq != std::string_view::npos) {
      f.values_[std::string(name)] = std::string(inline_value);
      continue;
    }
    if (i + 1 >= argc) {
      return Status::InvalidArgument(fmt::format("--{}", name),
                                     fmt::format("--{} needs a value", name));
    }
    f.values_[std::string(name)] = argv[++i];
  }
  return f;
}

std::string HelpText(const CommandSpec& spec) {
  std::string out = fmt::format("usage: oc {} [flags]{}{}\n{}\n\nflags:\n", spec.name,
                                spec.positional.empty() ? "" : " ", spec.positional, spec.summary);
  size_t width = 0;
  std::vector<std::string> heads;
  for (const FlagSpec& f : spec.flags) {
    heads.push_back(f.value.empty() ? fmt::format("--{}", f.name)
                                    : fmt::format("--{} {}", f.name, f.value));
    width = std::max(width, heads.back().size());
  }
  heads.emplace_back("--help");
  width = std::max(width, heads.back().size());
  for (size_t i = 0; i < spec.flags.size(); ++i) {
    const FlagSpec& f = spec.flags[i];
    out += fmt::format("  {:<{}}  {}", heads[i], width, f.help);
    if (!f.fallback.empty()) {
      out += fmt::format(" (default: {})", f.fallback);
    }
    out += "\n";
  }
  out += fmt::format("  {:<{}}  {}\n", heads.back(), width, "print this help and exit");
  if (!spec.notes.empty()) {
    out += fmt::format("\n{}\n", spec.notes);
  }
  if (!spec.examples.empty()) {
    out += spec.examples.size() == 1 ? "\nexample:\n" : "\nexamples:\n";
    for (std::string_view e : spec.examples) {
      out += fmt::format("  {}\n", e);
    }
  }
  return out;
}

}  // namespace oc::cli
