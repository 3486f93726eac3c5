#pragma once
// Config is a loaded TOML configuration file (conf/*.toml) with typed lookups by dotted
// key ("gateway.listen"). Each module reads its own table into its Options struct
// (`Status ApplyConfig(const Config&, XOptions*)`); precedence is default < file < flag,
// the last applied by the binary. Every Read marks its key as known, and
// CheckNoUnknownKeys() then rejects keys nobody asked for: a typo is a startup error,
// not a silently ignored setting.
//
// A dotted key's parts may be quoted TOML keys (`quota.buckets."my.photos".max_bytes`), so a
// table keyed by data (bucket names with dots) reads like any other (Names, SubKey).
//
// Reading the file is the only I/O here; it happens once, at startup.
// Thread safety: Read* may be called from one thread at a time (they record known keys);
// a Config is built and consumed at startup, before threads start.

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/result.h"

namespace oc {

class Config {
 public:
  Config();
  ~Config();
  Config(Config&&) noexcept;
  Config& operator=(Config&&) noexcept;

  // Parses a TOML file. kIOError if unreadable; kInvalidArgument (field = path, message
  // with line and column) on a syntax error.
  static Result<Config> LoadFile(const std::string& path);
  // Parses TOML text (for tests and embedded defaults).
  static Result<Config> Parse(std::string_view text, std::string_view source_name = "config");
  // A config with no keys: every Read leaves its default.
  static Config Empty();

  // Each Read leaves *out unchanged when the key is absent, returns kInvalidArgument
  // naming the key when the value has the wrong type or does not parse, and marks the
  // key as known.
  Status Read(std::string_view key, std::string* out) const;
  Status Read(std::string_view key, bool* out) const;
  Status Read(std::string_view key, uint64_t* out) const;  // non-negative integer
  Status Read(std::string_view key, uint32_t* out) const;
  Status Read(std::string_view key, double* out) const;  // float or integer
  Status Read(std::string_view key, std::vector<std::string>* out) const;
  // A size: an integer (bytes) or a string with a unit ("64MiB"); see ParseSize.
  Status ReadSize(std::string_view key, uint64_t* out) const;
  // A duration string with a unit ("30s", "250ms"); see ParseDuration.
  Status ReadDuration(std::string_view key, std::chrono::milliseconds* out) const;
  Status ReadDuration(std::string_view key, std::chrono::microseconds* out) const;
  // A table of sizes, usually inline (`buckets = { kvcache = 68719476736, other = "1GiB" }`):
  // its (name, size) pairs in name order, each value an integer of bytes or a size string.
  // kInvalidArgument naming "key" when it is not a table, "key.name" for a bad value. Marks
  // the key and each of its names known.
  Status ReadSizeTable(std::string_view key,
                       std::vector<std::pair<std::string, uint64_t>>* out) const;
  // True when the file has `key` (a value or a table); marks it known.
  bool Has(std::string_view key) const;
  // The names in the table at `key`, sorted (an inline table such as
  // `buckets = { photos = {...}, logs = {...} }` or a [section]); empty when absent.
  // kInvalidArgument naming the key when it is not a table. Read each entry under
  // SubKey(key, name): names are data (bucket names), so they may need quoting.
  Result<std::vector<std::string>> Names(std::string_view key) const;
  // `key` + "." + `name`, with `name` as a quoted TOML key when it is not a bare one
  // (letters, digits, '_' and '-'): `quota.buckets."my.photos"`. Every Read and error message
  // spells keys this way, and so does CheckNoUnknownKeys.
  static std::string SubKey(std::string_view key, std::string_view name);

  // kInvalidArgument naming the first key in the file that no Read asked for. Call once,
  // after every module applied its table.
  Status CheckNoUnknownKeys() const;

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

}  // namespace oc
