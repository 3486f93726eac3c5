#pragma once
// The data-plane wire format (docs/protocol.md, "Data plane" and "Data plane: connecting"):
// the bytes the storage server's data plane and a client's receiver exchange over UCX, beside
// the DataPlaneTarget that names where they go (descriptor.h). Pure bytes: no UCX type
// appears here. Each message is a UCX active message; this header fixes its id and the bytes of
// its AM header. Both ends use these encoders and decoders, the way leveldb's log_format.h is
// shared by its log reader and writer. All integers little-endian.
//
// Decoders take bytes from the network: every size, magic, version and field range is checked,
// and anything else is kCorruption. Reserved bytes are written 0 and not checked.
// Thread safety: constants and pure functions.

#include <array>
#include <cstddef>
#include <cstdint>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"

namespace oc::descriptor {

// Version byte of every data-plane message; a message of another version is refused.
inline constexpr uint32_t kDataPlaneWireVersion = 1;

// ---------------------------------------------------------------------------------------
// Notifications: one active message per event, id kNotificationAmId, carrying a fixed 24-byte
// header as the AM header and, for an error, the message text as the AM data.
//
//   offset size field
//   0      4    magic "OCDP" (0x4F,0x43,0x44,0x50 on the wire)
//   4      1    version (kDataPlaneWireVersion)
//   5      1    kind: 1 layer-ready, 2 done, 3 error
//   6      1    status code (oc::Code) for error; 0 otherwise
//   7      1    reserved, 0
//   8      8    request key: the target address the descriptor named (x-oc-target-address)
//   16     4    layer index (layer-ready); layers notified (done); 0 (error)
//   20     4    bytes of the error message in the AM data (error); 0 otherwise

inline constexpr unsigned kNotificationAmId = 0x0C;
inline constexpr size_t kNotificationBytes = 24;
// Error text longer than this is cut by the sender and refused by the receiver, so a
// notification always fits an eager active message.
inline constexpr uint32_t kMaxErrorMessageBytes = 1024;
inline constexpr std::array<std::byte, 4> kNotificationMagic = {std::byte{'O'}, std::byte{'C'},
                                                                std::byte{'D'}, std::byte{'P'}};

enum class NotificationKind : uint8_t { kLayerReady = 1, kDone = 2, kError = 3 };

struct Notification {
  NotificationKind kind = NotificationKind::kLayerReady;
  Code code = Code::kOk;     // kError only; never kOk for an error
  uint64_t request_key = 0;  // the target address
  uint32_t layer = 0;        // layer index, or layers notified for kDone
  uint32_t message_bytes = 0;
};

std::array<std::byte, kNotificationBytes> EncodeNotification(const Notification& n);

// Decodes a header received from the wire; kCorruption on a size other than
// kNotificationBytes, a bad magic or version, an unknown kind, a status code past oc::Code or
// one that disagrees with the kind (an error needs one, other kinds must have 0), or a message
// length over kMaxErrorMessageBytes or given for a kind other than error.
Result<Notification> DecodeNotification(ByteSpan header);

// ---------------------------------------------------------------------------------------
// Layer bytes sent as a rendezvous active message (WriteMode::kRendezvous): AM id kDataAmId,
// a 24-byte AM header, the bytes as the AM data (fetched by the receiver into its target).
//
//   offset size field
//   0      4    magic "OCDD"
//   4      1    version (kDataPlaneWireVersion)
//   5      3    reserved, 0
//   8      8    request key: the target address
//   16     8    offset of the bytes within the target

inline constexpr unsigned kDataAmId = 0x0D;
inline constexpr size_t kDataHeaderBytes = 24;
inline constexpr std::array<std::byte, 4> kDataMagic = {std::byte{'O'}, std::byte{'C'},
                                                        std::byte{'D'}, std::byte{'D'}};

struct DataHeader {
  uint64_t request_key = 0;
  uint64_t offset = 0;
};

std::array<std::byte, kDataHeaderBytes> EncodeDataHeader(const DataHeader& h);

// kCorruption on a size other than kDataHeaderBytes, a bad magic or version.
Result<DataHeader> DecodeDataHeader(ByteSpan header);

// ---------------------------------------------------------------------------------------
// The handshake (docs/protocol.md, "Data plane: connecting";
// docs/decisions/data-plane-who-connects-to-whom.md). The storage server's data plane listens on a
// socket address; a client's data plane connects to it, sends a hello active message carrying its
// owner secret, and the server answers with a welcome carrying a fresh random 128-bit connection
// id, which the client then names in its descriptors (x-oc-target-connection). Both are sent with
// UCP_AM_SEND_FLAG_REPLY and are all AM header.

inline constexpr unsigned kHelloAmId = 0x0E;
inline constexpr unsigned kWelcomeAmId = 0x0F;

// The client data plane's owner secret, carried by the hello: the server derives from it the
// token that heads every target the client's UCX allocates (oc_ucx's owner_token.h, whose
// OwnerSecret is this same array type).
inline constexpr size_t kHelloSecretBytes = 32;
using HelloSecret = std::array<std::byte, kHelloSecretBytes>;

// Hello (client -> server):
//   offset size field
//   0      4    magic "OCHI"
//   4      1    version (kDataPlaneWireVersion)
//   5      3    reserved, 0
//   8      32   the client data plane's owner secret
inline constexpr size_t kHelloBytes = 8 + kHelloSecretBytes;
// Welcome (server -> client):
//   0      4    magic "OCWE"
//   4      1    version (kDataPlaneWireVersion)
//   5      3    reserved, 0
//   8      16   the connection id
inline constexpr size_t kWelcomeBytes = 8 + kConnectionIdBytes;
inline constexpr std::array<std::byte, 4> kHelloMagic = {std::byte{'O'}, std::byte{'C'},
                                                         std::byte{'H'}, std::byte{'I'}};
inline constexpr std::array<std::byte, 4> kWelcomeMagic = {std::byte{'O'}, std::byte{'C'},
                                                           std::byte{'W'}, std::byte{'E'}};

std::array<std::byte, kHelloBytes> EncodeHello(const HelloSecret& secret);
// kCorruption unless `header` is a hello of this version (size, magic, version).
Result<HelloSecret> DecodeHello(ByteSpan header);

std::array<std::byte, kWelcomeBytes> EncodeWelcome(const ConnectionId& id);
// kCorruption unless `header` is a welcome of this version (size, magic, version).
Result<ConnectionId> DecodeWelcome(ByteSpan header);

// Bit of the client worker's client_id (UCX sends it in the connection request): set when the
// client's transports allow shared memory, so that the server derives the same endpoint
// error-handling mode as the client (oc_ucx's transports.h, ErrorMode).
inline constexpr uint64_t kClientIdSharedMemory = 1;

}  // namespace oc::descriptor
