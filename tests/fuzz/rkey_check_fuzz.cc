// Fuzzes the server's check of a client's packed rkey before UCX unpacks it
// (storage-server/src/data_plane/rkey_check.h). The input names the endpoint's remote memory
// domains, the target and the key:
//   byte 0          n: how many (md index, component) pairs follow (n % 16)
//   2n bytes        each: md index (% 64), component (% 7, MdComponent's order)
//   16 bytes        target address and length, little-endian
//   the rest        the packed rkey as the client sent it
// Whatever the check accepts must be a key UCX may unpack safely: the rebuilt key never holds
// more bytes than were given, holds only entries of accepted components (self, tcp, cma,
// sysv, ib) with exactly the size UCX packs for them, copied unchanged from the client's key,
// drops only the entries of memory domains on no lane, and is followed by zero padding. A
// refusal names x-oc-target-rkey or x-oc-target-length. Any other outcome aborts.
#include <cstdint>
#include <cstring>
#include <map>

#include "data_plane/rkey_check.h"
#include "oc/common/bytes.h"
#include "oc/common/check.h"

namespace {

using oc::storage::MdComponent;

size_t EntryBytes(MdComponent c) {
  switch (c) {
    case MdComponent::kSysv:
      return 12;
    case MdComponent::kIb:
      return 8;
    default:
      return 0;
  }
}

// The entries of a packed key by md index; false if the key is not whole.
bool Entries(oc::ByteSpan key, std::map<size_t, oc::ByteSpan>* out, size_t* end) {
  if (key.size() < 9) {
    return false;
  }
  size_t at = 9;
  for (uint64_t map = oc::GetLittleEndian64(key.data()); map != 0; map &= map - 1) {
    if (at >= key.size()) {
      return false;
    }
    const auto n = static_cast<size_t>(key[at]);
    if (n > key.size() - at - 1) {
      return false;
    }
    (*out)[static_cast<size_t>(__builtin_ctzll(map))] = key.subspan(at + 1, n);
    at += 1 + n;
  }
  *end = at;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::ByteSpan in(reinterpret_cast<const std::byte*>(data), size);
  if (in.empty()) {
    return 0;
  }
  oc::storage::EndpointInfo info;
  const size_t pairs = static_cast<size_t>(in[0]) % 16;
  in = in.subspan(1);
  if (in.size() < 2 * pairs + 16) {
    return 0;
  }
  for (size_t i = 0; i < pairs; ++i) {
    info.remote_mds[static_cast<size_t>(in[2 * i]) % oc::storage::kMaxMds] =
        static_cast<MdComponent>(static_cast<uint8_t>(in[2 * i + 1]) % 7);
  }
  in = in.subspan(2 * pairs);
  const uint64_t address = oc::GetLittleEndian64(in.data());
  const uint64_t length = oc::GetLittleEndian64(in.data() + 8);
  const oc::ByteSpan key = in.subspan(16);
  const oc::ucx::OwnerToken owner{};

  const oc::Result<oc::storage::CheckedRkey> checked =
      oc::storage::CheckRkey(key, info, address, length, owner);
  if (!checked.has_value()) {
    const oc::Status& st = checked.error();
    OC_CHECK(st.code() == oc::Code::kInvalidArgument || st.code() == oc::Code::kPermissionDenied);
    OC_CHECK(st.field() == "x-oc-target-rkey" || st.field() == "x-oc-target-length");
    return 0;
  }
  const std::vector<std::byte>& packed = checked->packed;
  OC_CHECK(packed.size() >= oc::storage::kRkeyPadding);
  const size_t body = packed.size() - oc::storage::kRkeyPadding;
  OC_CHECK(body <= key.size());
  for (size_t i = body; i < packed.size(); ++i) {
    OC_CHECK(packed[i] == std::byte{0});
  }
  std::map<size_t, oc::ByteSpan> given;
  std::map<size_t, oc::ByteSpan> kept;
  size_t given_end = 0;
  size_t kept_end = 0;
  OC_CHECK(Entries(key, &given, &given_end));
  OC_CHECK(Entries(oc::ByteSpan(packed.data(), body), &kept, &kept_end));
  OC_CHECK(kept_end == body);
  OC_CHECK(packed[8] == std::byte{0});  // host memory
  bool sysv = false;
  for (const auto& [index, entry] : given) {
    const MdComponent c = info.remote_mds[index];
    OC_CHECK(c != MdComponent::kOther);  // a refused component never passes
    const auto k = kept.find(index);
    if (c == MdComponent::kNone) {
      OC_CHECK(k == kept.end());  // dropped
      continue;
    }
    OC_CHECK(k != kept.end());
    OC_CHECK(entry.size() == EntryBytes(c) && k->second.size() == entry.size());
    OC_CHECK(std::memcmp(entry.data(), k->second.data(), entry.size()) == 0);
    sysv = sysv || c == MdComponent::kSysv;
  }
  for (const auto& [index, entry] : kept) {
    OC_CHECK(given.count(index) == 1);
  }
  OC_CHECK(sysv == (checked->sysv_id >= 0));
  return 0;
}
