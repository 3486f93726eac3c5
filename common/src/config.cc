#include "oc/common/config.h"

#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "oc/common/units.h"

namespace oc {

struct Config::Rep {
  toml::table table;
  mutable std::set<std::string, std::less<>> known;
};

Config::Config() : rep_(std::make_unique<Rep>()) {}
Config::~Config() = default;
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;

Config Config::Empty() { return Config(); }

Result<Config> Config::Parse(std::string_view text, std::string_view source_name) {
  // Debian's toml++ is built with exceptions: a parse error throws. This runs once at
  // startup, off the data path, so the exception is caught right here.
  Config config;
  try {
    config.rep_->table = toml::parse(text, source_name);
  } catch (const toml::parse_error& err) {
    return Status::InvalidArgument(
        std::string(source_name),
        fmt::format("TOML error at line {} column {}: {}", err.source().begin.line,
                    err.source().begin.column, err.description()));
  }
  return config;
}

Result<Config> Config::LoadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IOError(fmt::format("cannot read config file {}", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

namespace {

bool IsBareKey(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// The next part of a dotted key at *pos: a bare name up to the next '.', or a quoted one
// ("my.photos", with \" and \\ escapes); advances *pos past it and its '.'. nullopt when the
// quoting is broken.
std::optional<std::string> NextPart(std::string_view key, size_t* pos) {
  std::string part;
  size_t i = *pos;
  if (i < key.size() && key[i] == '"') {
    for (++i; i < key.size() && key[i] != '"'; ++i) {
      if (key[i] == '\\' && i + 1 < key.size()) {
        ++i;
      }
      part.push_back(key[i]);
    }
    if (i >= key.size()) {
      return std::nullopt;
    }
    ++i;  // the closing quote
  } else {
    for (; i < key.size() && key[i] != '.'; ++i) {
      part.push_back(key[i]);
    }
  }
  if (i < key.size() && key[i] != '.') {
    return std::nullopt;
  }
  *pos = i < key.size() ? i + 1 : i;
  return part;
}

// Walks a dotted key (parts bare or quoted); nullptr when absent.
const toml::node* Find(const toml::table& table, std::string_view key) {
  const toml::node* node = nullptr;
  const toml::table* at = &table;
  size_t pos = 0;
  while (pos < key.size()) {
    if (at == nullptr) {
      return nullptr;
    }
    std::optional<std::string> part = NextPart(key, &pos);
    if (!part.has_value()) {
      return nullptr;
    }
    node = at->get(*part);
    if (node == nullptr) {
      return nullptr;
    }
    at = node->as_table();
  }
  return node;
}

Status WrongType(std::string_view key, std::string_view want) {
  return Status::InvalidArgument(std::string(key), fmt::format("must be {}", want));
}

void Collect(const toml::table& table, const std::string& prefix, std::vector<std::string>* out) {
  for (const auto& [name, node] : table) {
    std::string key = prefix.empty() ? Config::SubKey("", name.str()).substr(1)
                                     : Config::SubKey(prefix, name.str());
    if (const toml::table* sub = node.as_table()) {
      Collect(*sub, key, out);
    } else {
      out->push_back(std::move(key));
    }
  }
}

}  // namespace

bool Config::Has(std::string_view key) const {
  rep_->known.emplace(key);
  return Find(rep_->table, key) != nullptr;
}

std::string Config::SubKey(std::string_view key, std::string_view name) {
  std::string out(key);
  out += '.';
  if (IsBareKey(name)) {
    out += name;
    return out;
  }
  out += '"';
  for (char c : name) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
  return out;
}

Result<std::vector<std::string>> Config::Names(std::string_view key) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return std::vector<std::string>();
  }
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return WrongType(key, "a table");
  }
  std::vector<std::string> names;
  for (const auto& [name, value] : *table) {
    names.emplace_back(name.str());
  }
  return names;
}

Status Config::Read(std::string_view key, std::string* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* v = node->as_string();
  if (v == nullptr) {
    return WrongType(key, "a string");
  }
  *out = v->get();
  return Status::Ok();
}

Status Config::Read(std::string_view key, bool* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* v = node->as_boolean();
  if (v == nullptr) {
    return WrongType(key, "true or false");
  }
  *out = v->get();
  return Status::Ok();
}

Status Config::Read(std::string_view key, uint64_t* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* v = node->as_integer();
  if (v == nullptr || v->get() < 0) {
    return WrongType(key, "a non-negative integer");
  }
  *out = static_cast<uint64_t>(v->get());
  return Status::Ok();
}

Status Config::Read(std::string_view key, uint32_t* out) const {
  uint64_t wide = *out;
  OC_RETURN_IF_ERROR(Read(key, &wide));
  if (wide > UINT32_MAX) {
    return WrongType(key, "an integer below 2^32");
  }
  *out = static_cast<uint32_t>(wide);
  return Status::Ok();
}

Status Config::Read(std::string_view key, double* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (const auto* f = node->as_floating_point()) {
    *out = f->get();
  } else if (const auto* i = node->as_integer()) {
    *out = static_cast<double>(i->get());
  } else {
    return WrongType(key, "a number");
  }
  return Status::Ok();
}

Status Config::Read(std::string_view key, std::vector<std::string>* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const toml::array* arr = node->as_array();
  if (arr == nullptr) {
    return WrongType(key, "an array of strings");
  }
  std::vector<std::string> values;
  for (const toml::node& item : *arr) {
    const auto* s = item.as_string();
    if (s == nullptr) {
      return WrongType(key, "an array of strings");
    }
    values.push_back(s->get());
  }
  *out = std::move(values);
  return Status::Ok();
}

Status Config::ReadSize(std::string_view key, uint64_t* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (node->is_integer()) {
    return Read(key, out);
  }
  const auto* s = node->as_string();
  if (s == nullptr) {
    return WrongType(key, "a size such as \"64MiB\"");
  }
  OC_ASSIGN_OR_RETURN(*out, ParseSize(s->get(), key));
  return Status::Ok();
}

Status Config::ReadDuration(std::string_view key, std::chrono::milliseconds* out) const {
  std::chrono::microseconds us = *out;
  OC_RETURN_IF_ERROR(ReadDuration(key, &us));
  *out = std::chrono::duration_cast<std::chrono::milliseconds>(us);
  return Status::Ok();
}

Status Config::ReadDuration(std::string_view key, std::chrono::microseconds* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* s = node->as_string();
  if (s == nullptr) {
    return WrongType(key, "a duration such as \"30s\"");
  }
  OC_ASSIGN_OR_RETURN(std::chrono::nanoseconds ns, ParseDuration(s->get(), key));
  *out = std::chrono::duration_cast<std::chrono::microseconds>(ns);
  return Status::Ok();
}

Status Config::ReadSizeTable(std::string_view key,
                             std::vector<std::pair<std::string, uint64_t>>* out) const {
  rep_->known.emplace(key);
  const toml::node* node = Find(rep_->table, key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return WrongType(key, "a table of sizes such as { name = \"64GiB\" }");
  }
  std::vector<std::pair<std::string, uint64_t>> values;
  for (const auto& [name, value] : *table) {
    const std::string full = SubKey(key, name.str());  // a bucket name may hold dots
    rep_->known.emplace(full);
    uint64_t bytes = 0;
    if (const auto* i = value.as_integer()) {
      if (i->get() < 0) {
        return WrongType(full, "a non-negative size");
      }
      bytes = static_cast<uint64_t>(i->get());
    } else if (const auto* s = value.as_string()) {
      OC_ASSIGN_OR_RETURN(bytes, ParseSize(s->get(), full));
    } else {
      return WrongType(full, "a size such as \"64GiB\"");
    }
    values.emplace_back(std::string(name.str()), bytes);
  }
  *out = std::move(values);
  return Status::Ok();
}

Status Config::CheckNoUnknownKeys() const {
  std::vector<std::string> keys;
  Collect(rep_->table, "", &keys);
  for (const std::string& key : keys) {
    if (rep_->known.find(key) == rep_->known.end()) {
      return Status::InvalidArgument(key, "unknown configuration key");
    }
  }
  return Status::Ok();
}

}  // namespace oc
