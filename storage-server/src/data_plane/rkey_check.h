#pragma once
// Checks a client's packed rkey completely before UCX parses it
// (docs/decisions/data-plane-rkey-check.md). ucp_ep_rkey_unpack takes no length and trusts every
// byte, and each entry is handed to the memory domain's own unpack: System V attaches the segment
// id it names, POSIX opens a file named by a pid and maps a length from the key. So the server:
//  - walks the key as UCX 1.13 packs it (64-bit map of the CLIENT's memory-domain indices, one
//    memory-type byte, one length-prefixed entry per map bit; an optional trailer after);
//  - learns which component each remote md index is from its own endpoint's configuration
//    (ucp_ep_print_info of the endpoint, lanes printed as "md[i] -> md[j]/<component>":
//    text of this process, ParseEndpointInfo), since the indices follow the client's UCX
//    configuration;
//  - refuses host memory only, and entries of components it does not write through (posix,
//    xpmem, knem, GPU memory domains, anything unknown on a lane), and checks each accepted
//    entry's size against what UCX 1.13 packs for it;
//  - for a System V entry checks the segment itself: it exists (shmctl IPC_STAT), it covers
//    the owner page and the target, and its owner page names the requesting connection
//    (read through a read-only attachment of our own, shmdt at once);
//  - rebuilds the key from the accepted entries only: entries whose remote md is on none of
//    the endpoint's lanes are dropped (UCX would use them for nothing, and their component is
//    unknown), and the trailer goes. UCX unpacks that copy, zero-padded.
// Thread safety: pure functions (CheckRkey reads the System V segment table).

#include <ucp/api/ucp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/ucx/owner_token.h"

namespace oc::storage {

// A remote memory domain as this server's endpoint to the client sees it.
enum class MdComponent : uint8_t {
  kNone,   // on none of the endpoint's lanes
  kSelf,   // rkey entry 0 bytes
  kTcp,    // 0 bytes
  kCma,    // 0 bytes
  kSysv,   // 12 bytes: u32 segment id, u64 the segment's address in the client
  kIb,     // 8 bytes (rc, dc, ud: the "ib" component)
  kOther,  // posix, xpmem, knem, cuda, rocm... refused
};

// Largest number of memory domains a UCX 1.13 context has (ucp_md_map_t is 64 bits).
inline constexpr size_t kMaxMds = 64;

struct EndpointInfo {
  std::array<MdComponent, kMaxMds> remote_mds{};  // by remote md index
  bool tcp_lane = false;  // a lane (other than the connection manager's) uses tcp
};

// Parses ucp_ep_print_info output: every "-> md[j]/<component>" of a lane line.
EndpointInfo ParseEndpointInfo(std::string_view text);

// ucp_ep_print_info of `ep` parsed. REQUIRES: on the worker's owning thread.
EndpointInfo QueryEndpointInfo(ucp_ep_h ep);

// The bytes UCX may unpack for one target, and the System V segment they name (if any).
struct CheckedRkey {
  std::vector<std::byte> packed;  // map, memory type, accepted entries; zero-padded after
  int sysv_id = -1;
};

// Bytes of zero padding after a checked rkey: ucp_ep_rkey_unpack reads no further than the
// entries, but the copy costs nothing and keeps a miscount inside our buffer.
inline constexpr size_t kRkeyPadding = 64;

// Checks `rkey` for a target [address, address + length) written through an endpoint with
// `info`, for the connection whose owner token is `owner`. kInvalidArgument naming
// x-oc-target-rkey for a malformed key, a memory type other than host, an entry of a refused
// component or of the wrong size, or a System V segment that does not exist; naming
// x-oc-target-length when the target leaves that segment (or starts in its owner page);
// kPermissionDenied naming x-oc-target-rkey when the segment's owner page names another
// connection.
Result<CheckedRkey> CheckRkey(ByteSpan rkey, const EndpointInfo& info, uint64_t address,
                              uint64_t length, const ucx::OwnerToken& owner);

}  // namespace oc::storage
