#pragma once
// Logging: a thin wrapper over fmt. One Logger per component (a file-scope constant),
// four levels, format strings checked at compile time, the level tested before anything
// is formatted, one line per event on stderr:
//   2025-01-07T10:31:02.118Z I storage req=9f2c41 layer sent layer=3 bytes=4194304
// Callers write key=value fields and always the request id where one exists; never
// secrets. Thread safety: every function may be called from any thread; a line is
// written with one write(2), so lines from different threads do not interleave.
// A line never carries a raw control byte: bytes below 0x20 and 0x7F in the formatted text
// (a request's key, header or query) are written as \xNN, so a client cannot forge or split
// lines. A field whose value comes from a request goes through LogField as well.

#include <string>
#include <string_view>
#include <utility>

#include <fmt/core.h>

namespace oc {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// Process-wide minimum level. Default: kInfo, or OC_LOG_LEVEL=debug|info|warn|error|off.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warn", "error", "off"; false if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* level);

// `value` made safe for a key=value field: bytes outside visible ASCII (0x21..0x7E), and backslash,
// '"' and '=', as \xNN, so the field ends at the next space and parses back unambiguously.
std::string LogField(std::string_view value);

namespace internal {
void WriteLogLine(LogLevel level, std::string_view component, std::string_view text);
}  // namespace internal

class Logger {
 public:
  explicit constexpr Logger(std::string_view component) : component_(component) {}

  static bool Enabled(LogLevel level) { return level >= GetLogLevel(); }

  template <typename... Args>
  void Debug(fmt::format_string<Args...> f, Args&&... args) const {
    Log(LogLevel::kDebug, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Info(fmt::format_string<Args...> f, Args&&... args) const {
    Log(LogLevel::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(fmt::format_string<Args...> f, Args&&... args) const {
    Log(LogLevel::kWarn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Error(fmt::format_string<Args...> f, Args&&... args) const {
    Log(LogLevel::kError, f, std::forward<Args>(args)...);
  }

 private:
  template <typename... Args>
  void Log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) const {
    if (!Enabled(level)) {
      return;
    }
    internal::WriteLogLine(level, component_, fmt::format(f, std::forward<Args>(args)...));
  }

  std::string_view component_;
};

}  // namespace oc
