#pragma once
// ConfigTable<Options>: one table per options struct, one row per TOML key {key, member,
// parser and bounds, doc}; the default is the struct's own initializer. Everything about a key
// is derived from its row (docs/decisions/config-tables.md):
//   Apply     reads the table from a Config (each key's wrong type or bad syntax is
//             kInvalidArgument naming "table.key"; absent keys leave the member unchanged)
//   Check     the rows' bounds (kInvalidArgument naming the key), for Validate() to call
//   Describe  "table.key=value ..." for the start-up log line (secret rows say set/unset)
//   Json      {"key":value,...} for /stats (secret rows likewise)
//   Toml      the table's text in a shipped conf file: its doc, then each key's doc and default
// A new key is one row. Unknown keys stay Config::CheckNoUnknownKeys' (a startup error).
// Thread safety: a table is built once (a function-local static) and then only read.

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/config.h"
#include "oc/common/status.h"

namespace oc {

namespace config_text {

// TOML text of a value (also its JSON text but for sizes and durations, which are strings).
std::string Quote(std::string_view s);
std::string Strings(const std::vector<std::string>& v);
// The largest binary unit that divides `bytes` exactly: "1GiB", "1088KiB", "0", "1000".
std::string Size(uint64_t bytes);
// The largest unit that divides `us` exactly: "2h", "30s", "250ms", "100us".
std::string Duration(std::chrono::microseconds us);
std::string Double(double d);
// `text` as '#' comment lines of at most `width` characters.
std::string Comment(std::string_view text, size_t width = 100);

}  // namespace config_text

template <class O>
class ConfigTable {
 public:
  struct Row {
    std::string key;  // within the table: "data_dir"
    std::string doc;  // one paragraph; the conf files wrap it into comment lines
    std::function<Status(const Config&, const std::string& full_key, O*)> read;
    std::function<Status(const O&, const std::string& full_key)> check;
    std::function<std::string(const O&)> toml;  // the value in TOML syntax
    std::function<std::string(const O&)> json;  // the effective value in JSON syntax
    bool secret = false;                        // describe as set/unset only
  };

  // `name` is the TOML table ("storage"); `doc` the paragraph above it in the conf files.
  ConfigTable(std::string name, std::string doc) : name_(std::move(name)), doc_(std::move(doc)) {}

  const std::string& name() const { return name_; }
  const std::vector<Row>& rows() const { return rows_; }

  // --- Rows ---
  ConfigTable& Str(std::string key, std::string O::*m, std::string doc, bool secret = false) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.Read(k, &(o->*m)); };
    r.toml = [m](const O& o) { return config_text::Quote(o.*m); };
    r.json = r.toml;
    r.secret = secret;
    return *this;
  }
  ConfigTable& Bool(std::string key, bool O::*m, std::string doc) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.Read(k, &(o->*m)); };
    r.toml = [m](const O& o) { return std::string(o.*m ? "true" : "false"); };
    r.json = r.toml;
    return *this;
  }
  ConfigTable& Strings(std::string key, std::vector<std::string> O::*m, std::string doc) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.Read(k, &(o->*m)); };
    r.toml = [m](const O& o) { return config_text::Strings(o.*m); };
    r.json = r.toml;
    return *this;
  }
  // A plain integer in [min, max]. `effective` (optional) maps the configured value to the one
  // in use (0 = "from the cores") for Describe and Json.
  template <class I>
  ConfigTable& Int(std::string key, I O::*m, std::string doc, uint64_t min = 0,
                   uint64_t max = std::numeric_limits<I>::max(),
                   std::function<uint64_t(uint64_t)> effective = nullptr) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.Read(k, &(o->*m)); };
    r.check = [m, min, max](const O& o, const std::string& k) {
      const uint64_t v = o.*m;
      return InRange(k, v >= min && v <= max, std::to_string(min), std::to_string(max));
    };
    r.toml = [m](const O& o) { return std::to_string(o.*m); };
    r.json = [m, effective](const O& o) {
      return std::to_string(effective ? effective(o.*m) : static_cast<uint64_t>(o.*m));
    };
    return *this;
  }
  // A size: an integer of bytes or a string with a unit ("64MiB"), in [min, max].
  ConfigTable& Size(std::string key, uint64_t O::*m, std::string doc, uint64_t min = 0,
                    uint64_t max = std::numeric_limits<uint64_t>::max()) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.ReadSize(k, &(o->*m)); };
    r.check = [m, min, max](const O& o, const std::string& k) {
      return InRange(k, o.*m >= min && o.*m <= max, config_text::Size(min), config_text::Size(max));
    };
    r.toml = [m](const O& o) {
      const std::string s = config_text::Size(o.*m);
      return s.find_first_not_of("0123456789") == std::string::npos ? s : config_text::Quote(s);
    };
    r.json = [m](const O& o) { return std::to_string(o.*m); };
    return *this;
  }
  // A duration string with a unit ("30s"), in [min, max].
  template <class D>
  ConfigTable& Duration(std::string key, D O::*m, std::string doc, D min = D::zero(),
                        D max = D::max()) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) {
      return c.ReadDuration(k, &(o->*m));
    };
    r.check = [m, min, max](const O& o, const std::string& k) {
      return InRange(k, o.*m >= min && o.*m <= max, Text(min),
                     max == D::max() ? std::string("any") : Text(max));
    };
    r.toml = [m](const O& o) { return config_text::Quote(Text(o.*m)); };
    r.json = r.toml;
    return *this;
  }
  // A number (float or integer); its bounds are the struct's Validate's.
  ConfigTable& Double(std::string key, double O::*m, std::string doc) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = [m](const Config& c, const std::string& k, O* o) { return c.Read(k, &(o->*m)); };
    r.toml = [m](const O& o) { return config_text::Double(o.*m); };
    r.json = r.toml;
    return *this;
  }
  // One of the strings in `names`, each naming a value of E.
  template <class E>
  ConfigTable& Enum(std::string key, E O::*m, std::string doc,
                    std::vector<std::pair<std::string, E>> names) {
    Row& r = Add(std::move(key), std::move(doc));
    std::string choices;
    for (size_t i = 0; i < names.size(); ++i) {
      choices += (i == 0                  ? ""
                  : i + 1 == names.size() ? " or "
                                          : ", ") +
                 config_text::Quote(names[i].first);
    }
    r.read = [m, names, choices](const Config& c, const std::string& k, O* o) {
      std::string text;
      OC_RETURN_IF_ERROR(c.Read(k, &text));
      if (text.empty()) {
        return Status::Ok();
      }
      for (const auto& [n, v] : names) {
        if (n == text) {
          o->*m = v;
          return Status::Ok();
        }
      }
      return Status::InvalidArgument(k, "must be " + choices);
    };
    r.check = [m, names, choices](const O& o, const std::string& k) {
      for (const auto& [n, v] : names) {
        if (v == o.*m) {
          return Status::Ok();
        }
      }
      return Status::InvalidArgument(k, "must be " + choices);
    };
    r.toml = [m, names](const O& o) {
      for (const auto& [n, v] : names) {
        if (v == o.*m) {
          return config_text::Quote(n);
        }
      }
      return std::string("\"?\"");
    };
    r.json = r.toml;
    return *this;
  }

  // A key with its own reader and TOML spelling (a table of rows, a parsed name).
  ConfigTable& Custom(std::string key, std::string doc,
                      std::function<Status(const Config&, const std::string&, O*)> read,
                      std::function<std::string(const O&)> toml) {
    Row& r = Add(std::move(key), std::move(doc));
    r.read = std::move(read);
    r.toml = std::move(toml);
    r.json = r.toml;
    return *this;
  }

  // --- What the rows give ---
  Status Apply(const Config& config, O* options) const {
    for (const Row& r : rows_) {
      OC_RETURN_IF_ERROR(r.read(config, Full(r), options));
    }
    return Status::Ok();
  }
  Status Check(const O& options) const {
    for (const Row& r : rows_) {
      if (r.check) {
        OC_RETURN_IF_ERROR(r.check(options, Full(r)));
      }
    }
    return Status::Ok();
  }
  std::string Describe(const O& options) const {
    std::string out;
    for (const Row& r : rows_) {
      out += (out.empty() ? "" : " ") + Full(r) + "=" + Shown(r, options);
    }
    return out;
  }
  std::string Json(const O& options) const {
    std::string out = "{";
    for (const Row& r : rows_) {
      out += (out.size() == 1 ? "" : ",") + config_text::Quote(r.key) + ":" +
             (r.secret ? Shown(r, options) : r.json(options));
    }
    return out + "}";
  }
  // The table as a conf file lists it, at the values of `options` (the defaults).
  std::string Toml(const O& options) const {
    std::string out = config_text::Comment(doc_) + "[" + name_ + "]\n";
    for (const Row& r : rows_) {
      out += config_text::Comment(r.doc) + r.key + " = " + r.toml(options) + "\n";
    }
    return out;
  }

 private:
  Row& Add(std::string key, std::string doc) {
    rows_.push_back(Row{std::move(key), std::move(doc), {}, {}, {}, {}, false});
    return rows_.back();
  }
  std::string Full(const Row& r) const { return name_ + "." + r.key; }
  static std::string Shown(const Row& r, const O& options) {
    if (!r.secret) {
      return r.json(options);
    }
    return r.toml(options) == "\"\"" ? "\"(unset)\"" : "\"(set)\"";
  }
  template <class D>
  static std::string Text(D d) {
    return config_text::Duration(std::chrono::duration_cast<std::chrono::microseconds>(d));
  }
  static Status InRange(const std::string& key, bool ok, const std::string& lo,
                        const std::string& hi) {
    return ok ? Status::Ok() : Status::InvalidArgument(key, "must be " + lo + ".." + hi);
  }

  std::string name_;
  std::string doc_;
  std::vector<Row> rows_;
};

}  // namespace oc
