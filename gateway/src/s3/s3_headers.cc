#include "s3/s3_headers.h"

#include <array>
#include <charconv>
#include <chrono>
#include <ctime>
#include <random>

#include <fmt/core.h>

#include "oc/common/text.h"

namespace oc::gateway {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::tm ToUtc(int64_t unix_ms) {
  const time_t seconds = static_cast<time_t>(unix_ms >= 0 ? unix_ms / 1000 : 0);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return tm;
}

std::optional<int> Month(std::string_view name) {
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

bool Int(std::string_view s, int* out) {
  if (s.empty() || s.size() > 4) {
    return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "08:49:37"
bool Clock(std::string_view s, std::tm* tm) {
  return s.size() == 8 && s[2] == ':' && s[5] == ':' && Int(s.substr(0, 2), &tm->tm_hour) &&
         Int(s.substr(3, 2), &tm->tm_min) && Int(s.substr(6, 2), &tm->tm_sec);
}

std::optional<int64_t> Finish(std::tm tm) {
  if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 ||
      tm.tm_year < 70) {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

std::string_view StripTag(std::string_view tag) {
  if (tag.starts_with("W/")) {
    tag.remove_prefix(2);
  }
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    tag = tag.substr(1, tag.size() - 2);
  }
  return tag;
}

}  // namespace

std::string FormatHttpDate(int64_t unix_ms) {
  const std::tm tm = ToUtc(unix_ms);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[tm.tm_wday], tm.tm_mday,
                     kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string FormatIso8601(int64_t unix_ms) {
  const std::tm tm = ToUtc(unix_ms);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     unix_ms >= 0 ? unix_ms % 1000 : 0);
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  std::tm tm{};
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  if (text.size() == 29 && text[3] == ',' && text.substr(25) == " GMT") {
    std::optional<int> month = Month(text.substr(8, 3));
    if (!month || text[4] != ' ' || text[7] != ' ' || text[11] != ' ' || text[16] != ' ' ||
        !Int(text.substr(5, 2), &tm.tm_mday) || !Int(text.substr(12, 4), &tm.tm_year) ||
        !Clock(text.substr(17, 8), &tm)) {
      return std::nullopt;
    }
    tm.tm_mon = *month;
    tm.tm_year -= 1900;
    return Finish(tm);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
  const size_t comma = text.find(", ");
  if (comma != std::string_view::npos && text.ends_with(" GMT") && text.size() == comma + 2 + 22) {
    const std::string_view rest = text.substr(comma + 2);  // "06-Nov-94 08:49:37 GMT"
    std::optional<int> month = Month(rest.substr(3, 3));
    if (!month || rest[2] != '-' || rest[6] != '-' || rest[9] != ' ' ||
        !Int(rest.substr(0, 2), &tm.tm_mday) || !Int(rest.substr(7, 2), &tm.tm_year) ||
        !Clock(rest.substr(10, 8), &tm)) {
      return std::nullopt;
    }
    tm.tm_mon = *month;
    if (tm.tm_year < 70) {
      tm.tm_year += 100;  // two-digit years: 70..99 -> 19xx, 00..69 -> 20xx
    }
    return Finish(tm);
  }
  // asctime: "Sun Nov  6 08:49:37 1994"
  if (text.size() == 24 && text[3] == ' ' && text[7] == ' ' && text[10] == ' ' && text[19] == ' ') {
    std::optional<int> month = Month(text.substr(4, 3));
    std::string_view day = text.substr(8, 2);
    if (day.front() == ' ') {
      day.remove_prefix(1);
    }
    if (!month || !Int(day, &tm.tm_mday) || !Clock(text.substr(11, 8), &tm) ||
        !Int(text.substr(20, 4), &tm.tm_year)) {
      return std::nullopt;
    }
    tm.tm_mon = *month;
    tm.tm_year -= 1900;
    return Finish(tm);
  }
  return std::nullopt;
}

std::string QuoteEtag(std::string_view etag) {
  std::string out;
  out.reserve(etag.size() + 2);
  out.push_back('"');
  out.append(etag);
  out.push_back('"');
  return out;
}

bool EtagListMatches(std::string_view header, std::string_view etag) {
  header = Trim(header);
  if (header == "*") {
    return true;
  }
  while (!header.empty()) {
    const size_t comma = header.find(',');
    const std::string_view item = Trim(header.substr(0, comma));
    if (StripTag(item) == etag) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    header.remove_prefix(comma + 1);
  }
  return false;
}

ConditionOutcome EvaluateConditions(const Conditions& c, std::string_view etag,
                                    int64_t mtime_unix_ms, bool copy_source) {
  const int64_t mtime = mtime_unix_ms / 1000;
  if (c.if_match) {
    if (!EtagListMatches(*c.if_match, etag)) {
      return ConditionOutcome::kPreconditionFailed;
    }
  } else if (c.if_unmodified_since) {
    std::optional<int64_t> since = ParseHttpDate(*c.if_unmodified_since);
    if (since && mtime > *since) {
      return ConditionOutcome::kPreconditionFailed;
    }
  }
  const ConditionOutcome not_modified =
      copy_source ? ConditionOutcome::kPreconditionFailed : ConditionOutcome::kNotModified;
  if (c.if_none_match) {
    if (EtagListMatches(*c.if_none_match, etag)) {
      return not_modified;
    }
  } else if (c.if_modified_since) {
    std::optional<int64_t> since = ParseHttpDate(*c.if_modified_since);
    if (since && mtime <= *since) {
      return not_modified;
    }
  }
  return ConditionOutcome::kProceed;
}

}  // namespace oc::gateway

namespace oc::gateway {
namespace {
constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
int Base64Value(char c) {
  const size_t pos = kBase64Alphabet.find(c);
  return pos == std::string_view::npos ? -1 : static_cast<int>(pos);
}
}  // namespace

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + static_cast<size_t>(j)];
      if (c == '=') {
        // Padding only in the last group, only in its last two places, and only trailing.
        if (i + 4 != text.size() || j < 2) {
          return std::nullopt;
        }
        v[j] = 0;
        ++pad;
      } else {
        if (pad > 0) {
          return std::nullopt;
        }
        v[j] = Base64Value(c);
        if (v[j] < 0) {
          return std::nullopt;
        }
      }
    }
    const uint32_t triple = (static_cast<uint32_t>(v[0]) << 18) |
                            (static_cast<uint32_t>(v[1]) << 12) |
                            (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
    out.push_back(static_cast<char>((triple >> 16) & 0xFF));
    if (pad < 2) {
      out.push_back(static_cast<char>((triple >> 8) & 0xFF));
    }
    if (pad < 1) {
      out.push_back(static_cast<char>(triple & 0xFF));
    }
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t triple = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) {
      triple |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    if (i + 2 < bytes.size()) {
      triple |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    }
    out.push_back(kBase64Alphabet[(triple >> 18) & 0x3F]);
    out.push_back(kBase64Alphabet[(triple >> 12) & 0x3F]);
    out.push_back(i + 1 < bytes.size() ? kBase64Alphabet[(triple >> 6) & 0x3F] : '=');
    out.push_back(i + 2 < bytes.size() ? kBase64Alphabet[triple & 0x3F] : '=');
  }
  return out;
}

std::string NextRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789ABCDEF";
  uint64_t v = rng();
  std::string id(16, '0');
  for (int i = 15; i >= 0; --i) {
    id[static_cast<size_t>(i)] = kHex[v & 0xF];
    v >>= 4;
  }
  return id;
}

const std::string& CurrentHttpDate() {
  thread_local int64_t cached_second = -1;
  thread_local std::string cached;
  const auto now = std::chrono::system_clock::now();
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  if (ms / 1000 != cached_second) {
    cached_second = ms / 1000;
    cached = FormatHttpDate(ms);
  }
  return cached;
}

}  // namespace oc::gateway
