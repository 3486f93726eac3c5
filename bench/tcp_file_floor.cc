// tcp_file_floor: what an HTTP client's PUT into a file can reach on this machine with no HTTP,
// no hashing and no store: one process sends N bytes over loopback TCP from memory it touched
// before the clock, another receives them into a page-aligned buffer and writes them to a file,
// then fdatasyncs. Buffered writes start write-back every 8 MiB with sync_file_range, as the
// data files do (storage-server/src/rocks/data_files.cc), and with --sync-every a thread
// fdatasyncs every that many bytes meanwhile (the data files' sync behind); --direct writes
// with O_DIRECT instead. The write bench runs it as a ceiling beside dd
// (bench/harness/write_bench_systems.py).
//
//   tcp_file_floor --file PATH --bytes N [--direct] [--sync-every BYTES] [--buffer BYTES]
//
// Prints one JSON line: bytes, seconds (accept to fdatasync done), gbps, the last fdatasync's
// seconds, and the receiver's and the sender's CPU seconds (getrusage; the sender's from
// wait4).

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

namespace {

constexpr uint64_t kWriteBehind = 8ull << 20;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "tcp_file_floor: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double CpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

char* PageAligned(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    Die("mmap");
  }
  std::memset(p, 0x5a, bytes);  // touched before the clock
  return static_cast<char*>(p);
}

void Send(uint16_t port, uint64_t total, size_t buffer) {
  char* data = PageAligned(buffer);
  for (size_t i = 0; i < buffer; i += 64) {
    data[i] = static_cast<char>(i * 131 + 7);
  }
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Die("connect");
  }
  for (uint64_t sent = 0; sent < total;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer, total - sent));
    size_t off = sent % buffer;
    const ssize_t n = ::send(s, data + off, std::min(want, buffer - off), MSG_NOSIGNAL);
    if (n <= 0) {
      Die("send");
    }
    sent += static_cast<uint64_t>(n);
  }
  ::close(s);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  uint64_t total = 0;
  size_t buffer = 4u << 20;
  bool direct = false;
  uint64_t sync_every = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--file" && i + 1 < argc) {
      path = argv[++i];
    } else if (a == "--bytes" && i + 1 < argc) {
      total = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--buffer" && i + 1 < argc) {
      buffer = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--sync-every" && i + 1 < argc) {
      sync_every = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--direct") {
      direct = true;
    } else {
      std::fprintf(stderr,
                   "usage: tcp_file_floor --file PATH --bytes N [--direct] "
                   "[--buffer BYTES]\n");
      return 2;
    }
  }
  if (path.empty() || total == 0 || buffer < 4096 || buffer % 4096 != 0 ||
      (direct && total % 4096 != 0)) {
    std::fprintf(stderr,
                 "tcp_file_floor: need --file, --bytes > 0 (a multiple of 4096 with "
                 "--direct) and a --buffer that is a multiple of 4096\n");
    return 2;
  }

  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("listen on 127.0.0.1");
  }
  const pid_t child = ::fork();
  if (child < 0) {
    Die("fork");
  }
  if (child == 0) {
    ::close(listener);
    Send(ntohs(addr.sin_port), total, buffer);
    ::_exit(0);
  }

  char* buf = PageAligned(buffer);
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0) {
    Die("open");
  }
  const int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) {
    Die("accept");
  }
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t got = 0;
  std::atomic<uint64_t> written_now{0};
  std::atomic<bool> stop{false};
  std::thread syncer;
  if (sync_every != 0) {
    syncer = std::thread([&] {
      uint64_t durable = 0;
      while (!stop.load()) {
        const uint64_t w = written_now.load();
        if (w - durable >= sync_every) {
          if (::fdatasync(fd) != 0) {
            Die("fdatasync");
          }
          durable = w;
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
    });
  }
  uint64_t written = 0;
  uint64_t synced = 0;
  size_t fill = 0;
  while (got < total) {
    const ssize_t n = ::recv(conn, buf + fill, buffer - fill, 0);
    if (n <= 0) {
      Die("recv");
    }
    fill += static_cast<size_t>(n);
    got += static_cast<uint64_t>(n);
    if (fill < buffer && got < total) {
      continue;
    }
    for (size_t off = 0; off < fill;) {
      const ssize_t w = ::pwrite(fd, buf + off, fill - off, static_cast<off_t>(written));
      if (w <= 0) {
        Die("pwrite");
      }
      off += static_cast<size_t>(w);
      written += static_cast<uint64_t>(w);
    }
    fill = 0;
    written_now.store(written);
    while (!direct && written - synced >= kWriteBehind) {
      if (::sync_file_range(fd, static_cast<off_t>(synced), kWriteBehind, SYNC_FILE_RANGE_WRITE) !=
          0) {
        Die("sync_file_range");
      }
      synced += kWriteBehind;
    }
  }
  stop.store(true);
  if (syncer.joinable()) {
    syncer.join();
  }
  const auto sync_start = std::chrono::steady_clock::now();
  if (::fdatasync(fd) != 0) {
    Die("fdatasync");
  }
  const double last_sync_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  int status = 0;
  rusage sender{};
  if (::wait4(child, &status, 0, &sender) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "tcp_file_floor: the sender failed\n");
    return 1;
  }
  ::close(fd);
  ::unlink(path.c_str());
  std::printf(
      "{\"mode\": \"%s\", \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.4f, "
      "\"last_sync_s\": %.4f, \"receiver_cpu_s\": %.3f, \"sender_cpu_s\": %.3f}\n",
      direct ? "tcp-direct" : "tcp-fdatasync", static_cast<unsigned long long>(got), seconds,
      static_cast<double>(got) / seconds / 1e9, last_sync_s, CpuSeconds(after) - CpuSeconds(before),
      CpuSeconds(sender));
  return 0;
}
