#pragma once
// Helpers for hermetic tests: a temp directory removed on destruction, a free loopback
// port, a child process killed by PID on destruction, and deterministic test bytes.
// Thread safety: none needed; tests use these from one thread.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace oc::testutil {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A TCP port on 127.0.0.1 that was free when asked (bind to port 0, read it back).
uint16_t FreePort();

// A child process started with execv; SIGKILLed and reaped on destruction unless it was
// waited for. Its stdout/stderr go to the test's.
class ChildProcess {
 public:
  ChildProcess(const std::string& program, const std::vector<std::string>& args);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `signal` and waits; returns the exit status as from waitpid.
  int Stop(int signal);

 private:
  pid_t pid_ = -1;
};

// `size` bytes that are a pure function of (seed, size): for byte-exact round trips.
std::vector<std::byte> PatternBytes(uint64_t seed, uint64_t size);

}  // namespace oc::testutil
