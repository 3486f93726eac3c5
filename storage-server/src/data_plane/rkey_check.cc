#include "data_plane/rkey_check.h"

#include <sys/ipc.h>
#include <sys/shm.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/core.h>

namespace oc::storage {
namespace {

constexpr std::string_view kRkeyField = "x-oc-target-rkey";
// The packed sizes of UCX 1.13's entries for the components we write through
// (uct_sysv_packed_rkey_t is packed: a 32-bit segment id and the owner's 64-bit address;
// the ib component packs a 64-bit key pair; self, tcp and cma need no key).
constexpr size_t kSysvEntryBytes = 12;
constexpr size_t kIbEntryBytes = 8;
// ucs_memory_type_t UCS_MEMORY_TYPE_HOST.
constexpr uint8_t kHostMemory = 0;

MdComponent ComponentNamed(std::string_view name) {
  if (name == "self") {
    return MdComponent::kSelf;
  }
  if (name == "tcp") {
    return MdComponent::kTcp;
  }
  if (name == "cma") {
    return MdComponent::kCma;
  }
  if (name == "sysv") {
    return MdComponent::kSysv;
  }
  if (name == "ib") {
    return MdComponent::kIb;
  }
  return MdComponent::kOther;
}

std::string_view ComponentName(MdComponent c) {
  switch (c) {
    case MdComponent::kNone:
      return "none";
    case MdComponent::kSelf:
      return "self";
    case MdComponent::kTcp:
      return "tcp";
    case MdComponent::kCma:
      return "cma";
    case MdComponent::kSysv:
      return "sysv";
    case MdComponent::kIb:
      return "ib";
    case MdComponent::kOther:
      break;
  }
  return "unsupported";
}

Status Invalid(std::string message) {
  return Status::InvalidArgument(std::string(kRkeyField), std::move(message));
}

// The System V entry's segment: it exists, covers the owner page and the target, and the
// owner page names `owner`. Read through our own read-only attachment, detached at once, so
// UCX never attaches a segment that fails here.
Status CheckSysvSegment(uint32_t id, uint64_t base, uint64_t address, uint64_t length,
                        const ucx::OwnerToken& owner) {
  shmid_ds ds{};
  if (id > static_cast<uint32_t>(INT32_MAX) || ::shmctl(static_cast<int>(id), IPC_STAT, &ds) != 0) {
    return Invalid(fmt::format("names System V segment {}, which does not exist", id));
  }
  uint64_t target_end = 0;
  uint64_t segment_end = 0;
  if (__builtin_add_overflow(address, length, &target_end) ||
      __builtin_add_overflow(base, static_cast<uint64_t>(ds.shm_segsz), &segment_end) ||
      ds.shm_segsz <= ucx::kOwnerPageBytes || address < base + ucx::kOwnerPageBytes ||
      target_end > segment_end) {
    return Status::InvalidArgument("x-oc-target-length",
                                   "the target is not inside the memory the client mapped");
  }
  void* page = ::shmat(static_cast<int>(id), nullptr, SHM_RDONLY);
  if (page == reinterpret_cast<void*>(-1)) {
    return Invalid(fmt::format("System V segment {} cannot be attached", id));
  }
  const bool owned = std::memcmp(page, owner.data(), owner.size()) == 0;
  (void)::shmdt(page);
  if (!owned) {
    return Status(Code::kPermissionDenied, Subject::kNone, std::string(kRkeyField),
                  "the rkey names shared memory that the requesting connection does not own");
  }
  return Status::Ok();
}

}  // namespace

EndpointInfo ParseEndpointInfo(std::string_view text) {
  EndpointInfo info;
  constexpr std::string_view kArrow = "-> md[";
  for (size_t at = text.find(kArrow); at != std::string_view::npos;
       at = text.find(kArrow, at + 1)) {
    size_t p = at + kArrow.size();
    size_t index = 0;
    size_t digits = 0;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9' && digits < 3) {
      index = index * 10 + static_cast<size_t>(text[p] - '0');
      ++p;
      ++digits;
    }
    if (digits == 0 || p + 1 >= text.size() || text[p] != ']' || text[p + 1] != '/' ||
        index >= kMaxMds) {
      continue;
    }
    p += 2;
    size_t end = p;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '_')) {
      ++end;
    }
    const MdComponent c = ComponentNamed(text.substr(p, end - p));
    info.remote_mds[index] = c;
    info.tcp_lane = info.tcp_lane || c == MdComponent::kTcp;
  }
  return info;
}

EndpointInfo QueryEndpointInfo(ucp_ep_h ep) {
  char* text = nullptr;
  size_t bytes = 0;
  std::FILE* out = ::open_memstream(&text, &bytes);
  if (out == nullptr) {
    return EndpointInfo{};  // every md unknown: every rkey is refused, nothing unsafe
  }
  ucp_ep_print_info(ep, out);
  std::fclose(out);
  EndpointInfo info = ParseEndpointInfo(std::string_view(text, bytes));
  std::free(text);
  return info;
}

Result<CheckedRkey> CheckRkey(ByteSpan rkey, const EndpointInfo& info, uint64_t address,
                              uint64_t length, const ucx::OwnerToken& owner) {
  constexpr size_t kFixed = sizeof(uint64_t) + 1;
  if (rkey.size() < kFixed) {
    return Invalid("not a whole packed rkey");
  }
  const uint64_t md_map = GetLittleEndian64(rkey.data());
  if (md_map == 0) {
    return Invalid("names no memory domain");  // UCX packs at least the one that mapped it
  }
  if (static_cast<uint8_t>(rkey[sizeof(uint64_t)]) != kHostMemory) {
    return Invalid("names memory other than host memory");
  }
  CheckedRkey out;
  out.packed.assign(rkey.begin(), rkey.begin() + kFixed);
  uint64_t kept = 0;
  size_t at = kFixed;
  for (uint64_t map = md_map; map != 0; map &= map - 1) {
    const auto index = static_cast<size_t>(__builtin_ctzll(map));
    if (at >= rkey.size()) {
      return Invalid("not a whole packed rkey");
    }
    const auto entry_bytes = static_cast<size_t>(rkey[at]);
    if (entry_bytes > rkey.size() - at - 1) {
      return Invalid("not a whole packed rkey");
    }
    const ByteSpan entry = rkey.subspan(at + 1, entry_bytes);
    const size_t next = at + 1 + entry_bytes;
    const MdComponent c = info.remote_mds[index];
    size_t want = 0;
    switch (c) {
      case MdComponent::kNone:
        at = next;
        continue;  // on no lane: dropped
      case MdComponent::kSelf:
      case MdComponent::kTcp:
      case MdComponent::kCma:
        want = 0;
        break;
      case MdComponent::kSysv:
        want = kSysvEntryBytes;
        break;
      case MdComponent::kIb:
        want = kIbEntryBytes;
        break;
      case MdComponent::kOther:
        return Invalid(
            fmt::format("entry {} is for a memory domain the server does not write "
                        "through (only sysv, cma, tcp, self and ib)",
                        index));
    }
    if (entry_bytes != want) {
      return Invalid(
          fmt::format("{} entry of {} bytes; UCX packs {}", ComponentName(c), entry_bytes, want));
    }
    if (c == MdComponent::kSysv) {
      if (out.sysv_id >= 0) {
        return Invalid("two System V entries");
      }
      const uint32_t id = GetLittleEndian32(entry.data());
      const uint64_t base = GetLittleEndian64(entry.data() + 4);
      OC_RETURN_IF_ERROR(CheckSysvSegment(id, base, address, length, owner));
      out.sysv_id = static_cast<int>(id);
    }
    out.packed.push_back(rkey[at]);
    out.packed.insert(out.packed.end(), entry.begin(), entry.end());
    kept |= uint64_t{1} << index;
    at = next;
  }
  PutLittleEndian64(kept, out.packed.data());
  out.packed.resize(out.packed.size() + kRkeyPadding);
  return out;
}

}  // namespace oc::storage
