// data_plane_peer: a client process for the cross-process data-plane tests
// (data_plane_failure_test.cc). It opens a client DataPlane, connects it to the server's data plane
// at <server> (host:port; <shm> 1 if the server's transports allow shared memory), allocates
// a target of num_layers x layer_bytes, and publishes the target (hex connection id, hex
// rkey, address, length, one per line) in <dir>/target, written to a temporary name and renamed so
// the test never reads half a file. Then, by mode:
//   die:    after layer 0 lands, creates <dir>/layer0 and sleeps until killed, so the test
//           can kill it in the middle of a transfer;
//   verify: waits for the whole request, checks every layer l against PatternBytes(l, S),
//           and creates <dir>/ok or <dir>/failed (with the reason), then exits.
// Usage: data_plane_peer <dir> <transports|-> <num_layers> <layer_bytes> <die|verify> <server>
//        <shm>
// Every wait is bounded; exit status 0 only in verify mode with every byte right.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/testutil/testutil.h"

namespace {

constexpr std::chrono::milliseconds kTimeout{20'000};

void Touch(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text << "\n";
}

int Run(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: data_plane_peer <dir> <transports|-> <L> <S> <die|verify> <server> "
                 "<shm>\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  oc::client::DataPlaneOptions options;
  if (std::strcmp(argv[2], "-") != 0) {
    options.transports = argv[2];
  }
  const uint32_t num_layers = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const uint64_t layer_bytes = std::strtoull(argv[4], nullptr, 10);
  const std::string mode = argv[5];

  auto plane = oc::client::DataPlane::Open(options);
  if (!plane.has_value()) {
    Touch(dir / "failed", plane.error().ToString());
    return 1;
  }
  auto connection = (*plane)->Connect(argv[6], std::strcmp(argv[7], "1") == 0);
  if (!connection.has_value()) {
    Touch(dir / "failed", connection.error().ToString());
    return 1;
  }
  auto buffer = (*plane)->Allocate(uint64_t{num_layers} * layer_bytes);
  if (!buffer.has_value()) {
    Touch(dir / "failed", buffer.error().ToString());
    return 1;
  }
  auto delivery = (*plane)->Expect((*buffer)->address(), num_layers);
  if (!delivery.has_value()) {
    Touch(dir / "failed", delivery.error().ToString());
    return 1;
  }
  const oc::descriptor::DataPlaneTarget target = (*buffer)->Target(*connection);
  {
    std::ofstream out(dir / "target.tmp");
    out << oc::HexEncode(target.connection) << "\n"
        << oc::HexEncode(target.rkey) << "\n"
        << target.address << "\n"
        << target.length << "\n";
  }
  std::filesystem::rename(dir / "target.tmp", dir / "target");

  if (mode == "die") {
    oc::Status s = (*delivery)->WaitLayer(0, kTimeout);
    if (!s.ok()) {
      Touch(dir / "failed", s.ToString());
      return 1;
    }
    Touch(dir / "layer0", "");
    std::this_thread::sleep_for(kTimeout);  // the test kills us long before this
    return 1;
  }

  oc::Status s = (*delivery)->Wait(kTimeout);
  if (!s.ok()) {
    Touch(dir / "failed", s.ToString());
    return 1;
  }
  const oc::MutableByteSpan bytes = (*buffer)->bytes();
  for (uint32_t l = 0; l < num_layers; ++l) {
    const std::vector<std::byte> want = oc::testutil::PatternBytes(l, layer_bytes);
    if (std::memcmp(bytes.data() + uint64_t{l} * layer_bytes, want.data(), layer_bytes) != 0) {
      Touch(dir / "failed", "layer " + std::to_string(l) + " differs");
      return 1;
    }
  }
  Touch(dir / "ok", "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
