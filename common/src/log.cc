#include "oc/common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

namespace oc {
namespace {

LogLevel InitialLevel() {
  LogLevel level = LogLevel::kInfo;
  if (const char* env = std::getenv("OC_LOG_LEVEL")) {
    ParseLogLevel(env, &level);
  }
  return level;
}

std::atomic<int>& LevelStorage() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

constexpr char kHex[] = "0123456789abcdef";

void AppendEscaped(unsigned char c, std::string* out) {
  out->append("\\x");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xF]);
}

}  // namespace

std::string LogField(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x21 || c > 0x7E || c == '\\' || c == '"' || c == '=') {
      AppendEscaped(c, &out);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

void SetLogLevel(LogLevel level) { LevelStorage().store(static_cast<int>(level)); }

LogLevel GetLogLevel() { return static_cast<LogLevel>(LevelStorage().load()); }

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") {
    *level = LogLevel::kDebug;
  } else if (text == "info") {
    *level = LogLevel::kInfo;
  } else if (text == "warn") {
    *level = LogLevel::kWarn;
  } else if (text == "error") {
    *level = LogLevel::kError;
  } else if (text == "off") {
    *level = LogLevel::kOff;
  } else {
    return false;
  }
  return true;
}

namespace internal {

void WriteLogLine(LogLevel level, std::string_view component, std::string_view text) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E', 'O'};
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string line =
      fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {} {} ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis,
                  kLetters[static_cast<int>(level)], component);
  line.reserve(line.size() + text.size() + 1);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      AppendEscaped(c, &line);  // one event, one line: no raw newline or escape sequence
    } else {
      line.push_back(ch);
    }
  }
  line.push_back('\n');
  // One write(2) per line keeps lines whole across threads.
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n <= 0) {
      return;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace internal
}  // namespace oc
