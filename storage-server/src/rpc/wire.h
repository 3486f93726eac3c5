#pragma once
// The storage RPC wire format, shared by the server (server_connection.h) and its client
// (remote_store_impl.h) and private to storage-server; docs/protocol.md, "Storage RPC", is the
// reference. Pure encoding and decoding: no I/O, no Asio, no RocksDB, so the fuzz preset
// builds it alone (target oc_storage_wire): frame.cc (op names, the header),
// wire_primitives.cc (WireWriter, WireReader), object_codecs.cc and kv_codecs.cc (the value
// codecs), validate_body.cc (every message's decoder), connect_params.cc (host:port, the
// secret compare). calls.h gives each call's request fields and reply as types.
//
// A connection carries frames. Every frame is a fixed 24-byte header and a body:
//
//   offset size field
//        0    4 magic        kMagic ("OCR1" as bytes)
//        4    1 version      kVersion; anything else is refused
//        5    1 op           Op
//        6    2 flags        kFlagReply on frames sent by the server
//        8    8 request id   chosen by the client, echoed in every frame of the call
//       16    8 body length  checked against a named maximum before anything is allocated
//
// Every integer on the wire is little-endian (the byte order of every machine we run on,
// and of the token ids in docs/design.md's chunk keys). Inside a body: strings and blobs are a
// u32 length then the bytes, the length checked against what remains of the frame;
// vectors are a u32 count checked against the remaining bytes divided by the smallest
// encoding of one element; optionals are a u8 0/1 then the value; a Status is (u8 code,
// u8 subject, field, message). docs/decisions/rpc-frames.md records the call sequences (handshake,
// streamed put and get, slice reads); the op table below is the reference.
//
// Thread safety: pure functions and value types.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/kv.h"
#include "oc/storage/types.h"

namespace oc::storage::rpc {

inline constexpr uint32_t kMagic = 0x3152434F;  // bytes 'O' 'C' 'R' '1'
// 2: ByteRange carries a part number and PutOptions write conditions (issue 17).
// 3: PutOptions and ObjectMeta carry tags, KvPutReport the create-if-absent outcomes; ops 36
//    (PutHeader) and 37 (PutObjectTags) exist; parts carry checksums (CompletedPart, PartInfo,
//    ListPartsResult, PutOptions::upload_checksum_header), Copy takes WriteConditions and
//    CompleteUpload CompleteOptions (issue 17; none of it was released before version 3).
inline constexpr uint8_t kVersion = 3;
inline constexpr size_t kHeaderBytes = 24;
// The hard ceiling on any frame body either side accepts, whatever is configured: a
// length above it is refused before any allocation. A list reply of 1000 keys with full
// metadata fits far below it.
inline constexpr uint64_t kMaxFrameBodyBytes = 64ull << 20;
// Object bytes travel in data frames of at most this size, so neither side holds more
// than one such piece of a streamed object.
inline constexpr uint64_t kStreamChunkBytes = 1ull << 20;
// Largest request body a client sends (everything but data frames): servers accept at
// least this much whatever their configuration, so a valid call is never refused for size.
inline constexpr uint64_t kMaxRequestBodyBytes = 1ull << 20;
// Largest request body of a descriptor call (kKvProbe, kKvGetLayers, kKvPutChunks): the
// bucket, the descriptor in the POST-body text of docs/protocol.md and the principal. The gateway
// accepts descriptor bodies of up to descriptor::Limits::max_body_bytes (8 MiB); re-encoding may
// percent-encode names the client sent raw (at most 3x), so the wire allows three times that
// plus room for the bucket. Servers accept it for these ops only, whatever
// rpc.max_frame_bytes says.
inline constexpr uint64_t kMaxKvRequestBodyBytes = 3 * (8ull << 20) + (64ull << 10);
// Longest shared secret accepted in a handshake.
inline constexpr uint64_t kMaxSecretBytes = 4096;

// Frame flags.
inline constexpr uint16_t kFlagReply = 1;
inline constexpr uint16_t kKnownFlags = kFlagReply;

// Ops. Values are the wire format: never renumber. Request bodies / reply bodies:
enum class Op : uint8_t {
  kHello = 1,             // secret                       / (empty)
  kError = 2,             // (server only)                / Status; ends the call
  kCreateBucket = 10,     // bucket, owner                / (empty)
  kDeleteBucket = 11,     // bucket                       / (empty)
  kHeadBucket = 12,       // bucket                       / BucketInfo
  kListBuckets = 13,      // (empty)                      / vector<BucketInfo>
  kPutBegin = 20,         // key, PutOptions              / (empty); then kData*, kCommit|kAbort
  kData = 21,             // raw object bytes, either direction; no reply
  kCommit = 22,           // (empty)                      / ObjectMeta
  kAbort = 23,            // (empty)                      / no reply: the writer is discarded
  kGet = 24,              // key, ByteRange               / ObjectMeta, offset, length; then kData*
  kHead = 25,             // key                          / ObjectMeta
  kDelete = 26,           // key                          / (empty)
  kCopy = 27,             // src, dst, optional<PutOptions>, WriteConditions / ObjectMeta
  kList = 28,             // bucket, ListOptions          / ListResult
  kHeadMany = 29,         // bucket, vector<string>       / vector<optional<ObjectMeta>>
  kCreateUpload = 30,     // key, PutOptions              / upload id
  kUploadPartBegin = 31,  // key, upload id, part, PutOptions / (empty); then as kPutBegin
  kCompleteUpload = 32,   // key, upload id, vector<CompletedPart>, CompleteOptions / ObjectMeta
  kAbortUpload = 33,      // key, upload id               / (empty)
  kListParts = 34,        // key, upload id, marker u32, max u32 / ListPartsResult
  kListUploads = 35,      // bucket, ListUploadsOptions   / ListUploadsResult
  // Inside a streamed write, before kCommit: ObjectWriter::AddHeader (a header known only at
  // the end of the body). No reply: an error is kept and answered at kCommit. A server older
  // than this op refuses it as unknown and closes the connection, so the write fails whole.
  kPutHeader = 36,  // name, value                    / no reply
  kPutTags = 37,    // key, vector<(key, value)>    / ObjectMeta (Store::PutObjectTags)
  // Bucket lifecycle (docs/decisions/lifecycle.md). A server older than these ops answers
  // them as unknown (kUnimplemented, field "op") and closes the connection.
  kDeleteIf = 38,      // key, ObjectVersionMatch     / (empty) (Store::DeleteIf)
  kSetLifecycle = 39,  // bucket, configuration       / (empty)
  kGetLifecycle = 42,  // bucket                      / configuration ("" for none)
  // 40 and 41 are reserved: they were ReadSlices and its SliceData frames, superseded by the
  // descriptor calls below (the storage server reads slices itself). A peer that still sends
  // them gets the error frame for an unknown op. Never reuse them.
  kStats = 50,  // (empty)                      / StoreStats
  // The served store's identity (Store::identity): which backend, and for RADOS which
  // cluster, pool and namespace; RemoteStore chooses its placement from it. A server older
  // than this op answers it as unknown (kUnimplemented, field "op") and closes the connection.
  kServerInfo = 51,  // (empty)                 / StoreIdentity
  // The descriptor calls (docs/protocol.md, "Storage RPC"). The descriptor travels as its
  // POST-body text (descriptor/codec.h) and is decoded and validated by the server with
  // DecodeDescriptorText; the principal (the request's access key, "" anonymous) follows it
  // and becomes the target's DataPlaneTarget::principal, which the text never carries.
  kKvProbe = 60,       // bucket, descriptor, principal / KvProbeResult
  kKvGetLayers = 61,   // bucket, descriptor, principal / kKvPlan, then (no target) kKvData and
                       // kKvLayerReady frames, then KvGetReport (or kError at any point)
  kKvPlan = 62,        // (server only) KvPlan, before any byte moves
  kKvData = 63,        // (server only) u64 payload offset, then the bytes
  kKvLayerReady = 64,  // (server only) u32 layer
  kKvPutChunks = 65,   // bucket, descriptor, principal; then kData* (no target only), then
                       // kCommit or kAbort (no reply of their own) / KvPutReport
  kKvDataPlane = 66,   // bucket                        / DataPlaneInfo: where clients connect
};

// True for the request ops that may carry up to kMaxKvRequestBodyBytes.
inline bool IsKvRequestOp(Op op) {
  return op == Op::kKvProbe || op == Op::kKvGetLayers || op == Op::kKvPutChunks;
}

// The descriptor limits the server applies to a descriptor from the wire: the gateway's
// defaults (descriptor::Limits), with the body bound raised to what a frame may carry.
descriptor::Limits WireDescriptorLimits();
// Decodes the descriptor text of call `op` and validates it against WireDescriptorLimits():
// kInvalidArgument/kDescriptor naming the x-oc-* field, as the gateway would answer. A
// kKvPutChunks descriptor is decoded as a PUT's (descriptor::Purpose::kPut: it may carry
// x-oc-if-none-match), the others as a GET's.
Result<descriptor::Descriptor> DecodeDescriptorText(std::string_view text, Op op);

// The name of an op for logs ("Get"); "unknown" for a value outside the table.
std::string_view OpName(Op op);
// True if `value` is an op of this version.
bool IsKnownOp(uint8_t value);

struct FrameHeader {
  uint8_t version = kVersion;
  Op op = Op::kError;
  uint16_t flags = 0;
  uint64_t request_id = 0;
  uint64_t body_length = 0;
};

// Writes the 24 header bytes into `out`.
void EncodeHeader(const FrameHeader& header, std::span<std::byte, kHeaderBytes> out);
// Decodes and checks a header: kInvalidArgument/field "magic" on a bad magic,
// kUnimplemented/field "version" for another version, kUnimplemented/field "op" for an
// unknown op, kInvalidArgument/field "flags" for unknown flags, kResourceExhausted/field
// "body_length" above `max_body_bytes` (callers pass their configured limit, never more
// than kMaxFrameBodyBytes). `header` is filled as far as it was read, so an error reply
// can echo the request id.
Status DecodeHeader(std::span<const std::byte, kHeaderBytes> in, uint64_t max_body_bytes,
                    FrameHeader* header);

// The resolved range a kGet reply announces before its data frames.
struct GetReply {
  ObjectMeta meta;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Appends body fields to a frame under construction.
class WireWriter {
 public:
  explicit WireWriter(std::vector<std::byte>* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(static_cast<std::byte>(v)); }
  void U16(uint16_t v);
  void U32(uint32_t v);
  void U64(uint64_t v);
  void Bytes(ByteSpan bytes);  // u32 length + bytes
  void Str(std::string_view s) { Bytes(AsBytes(s)); }
  void Raw(ByteSpan bytes) { out_->insert(out_->end(), bytes.begin(), bytes.end()); }

 private:
  std::vector<std::byte>* out_;
};

// Reads body fields. The first failure is kept and every later read does nothing, so a
// decoder reads all its fields and checks once (Finish).
class WireReader {
 public:
  explicit WireReader(ByteSpan data) : data_(data) {}
  bool U8(uint8_t* v);
  bool U16(uint16_t* v);
  bool U32(uint32_t* v);
  bool U64(uint64_t* v);
  bool I64(int64_t* v);
  bool Bool(bool* v);  // a u8 that must be 0 or 1
  bool Str(std::string* s);
  // A vector count: fails unless count * min_element_bytes fits in what remains.
  bool Count(uint32_t* count, size_t min_element_bytes);
  // The next `n` bytes without copying.
  bool Take(size_t n, ByteSpan* out);
  size_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return status_.ok(); }
  // Records a decode error (the first one wins); returns false.
  bool Fail(std::string_view field, std::string_view what);
  // The first error, or kInvalidArgument if bytes are left over.
  Status Finish();

 private:
  bool Need(size_t n, std::string_view field);
  ByteSpan data_;
  size_t pos_ = 0;
  Status status_;
};

// Field codecs, one pair per type that crosses the wire. Decode* return the reader's
// state (false after any error).
void Encode(WireWriter& w, uint8_t v);
void Encode(WireWriter& w, uint32_t v);
void Encode(WireWriter& w, uint64_t v);
void Encode(WireWriter& w, std::string_view v);
void Encode(WireWriter& w, const std::string& v);
void Encode(WireWriter& w, const Status& v);
void Encode(WireWriter& w, const ObjectKey& v);
void Encode(WireWriter& w, const ByteRange& v);
void Encode(WireWriter& w, const BucketInfo& v);
void Encode(WireWriter& w, const ObjectMeta& v);
void Encode(WireWriter& w, const PutOptions& v);
void Encode(WireWriter& w, const std::optional<PutOptions>& v);
void Encode(WireWriter& w, const ListOptions& v);
void Encode(WireWriter& w, const ListResult& v);
void Encode(WireWriter& w, const CompletedPart& v);
void Encode(WireWriter& w, const WriteConditions& v);
void Encode(WireWriter& w, const ObjectVersionMatch& v);
void Encode(WireWriter& w, const CompleteOptions& v);
void Encode(WireWriter& w, const ListPartsResult& v);
void Encode(WireWriter& w, const ListUploadsOptions& v);
void Encode(WireWriter& w, const ListUploadsResult& v);
void Encode(WireWriter& w, const GetReply& v);
void Encode(WireWriter& w, const StoreStats& v);
void Encode(WireWriter& w, const StoreIdentity& v);
void Encode(WireWriter& w, const KvPlan& v);
void Encode(WireWriter& w, const KvGetReport& v);
void Encode(WireWriter& w, const KvProbeResult& v);
void Encode(WireWriter& w, const KvPutReport& v);
void Encode(WireWriter& w, const DataPlaneInfo& v);
void Encode(WireWriter& w, const std::pair<std::string, std::string>& v);  // one tag
template <typename T>
void Encode(WireWriter& w, std::span<const T> v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const T& e : v) {
    Encode(w, e);
  }
}
template <typename T>
void Encode(WireWriter& w, const std::vector<T>& v) {
  Encode(w, std::span<const T>(v));
}

bool Decode(WireReader& r, uint8_t* v);
bool Decode(WireReader& r, uint32_t* v);
bool Decode(WireReader& r, uint64_t* v);
bool Decode(WireReader& r, std::string* v);
bool Decode(WireReader& r, Status* v);  // never decodes an OK status
bool Decode(WireReader& r, ObjectKey* v);
bool Decode(WireReader& r, ByteRange* v);
bool Decode(WireReader& r, BucketInfo* v);
bool Decode(WireReader& r, ObjectMeta* v);
bool Decode(WireReader& r, PutOptions* v);
bool Decode(WireReader& r, std::optional<PutOptions>* v);
bool Decode(WireReader& r, ListOptions* v);
bool Decode(WireReader& r, ListResult* v);
bool Decode(WireReader& r, CompletedPart* v);
bool Decode(WireReader& r, WriteConditions* v);
bool Decode(WireReader& r, ObjectVersionMatch* v);
bool Decode(WireReader& r, CompleteOptions* v);
bool Decode(WireReader& r, ListPartsResult* v);
bool Decode(WireReader& r, ListUploadsOptions* v);
bool Decode(WireReader& r, ListUploadsResult* v);
bool Decode(WireReader& r, GetReply* v);
bool Decode(WireReader& r, StoreStats* v);
bool Decode(WireReader& r, StoreIdentity* v);
bool Decode(WireReader& r, KvPlan* v);  // also checks matched <= num_chunks, a known mode
bool Decode(WireReader& r, KvGetReport* v);
bool Decode(WireReader& r, KvProbeResult* v);
bool Decode(WireReader& r, KvPutReport* v);
bool Decode(WireReader& r, DataPlaneInfo* v);
bool Decode(WireReader& r, std::vector<BucketInfo>* v);
bool Decode(WireReader& r, std::vector<CompletedPart>* v);
bool Decode(WireReader& r, std::vector<std::string>* v);
bool Decode(WireReader& r, Tags* v);
void Encode(WireWriter& w, const std::optional<ObjectMeta>& v);
bool Decode(WireReader& r, std::vector<std::optional<ObjectMeta>>* v);

// Builds one frame: header, then the fields in order, with the body length patched in.
template <typename... Fields>
void EncodeFrame(std::vector<std::byte>* out, Op op, uint16_t flags, uint64_t request_id,
                 const Fields&... fields) {
  const size_t start = out->size();
  out->resize(start + kHeaderBytes);
  WireWriter w(out);
  (Encode(w, fields), ...);
  FrameHeader h{kVersion, op, flags, request_id, out->size() - start - kHeaderBytes};
  EncodeHeader(h, std::span<std::byte, kHeaderBytes>(out->data() + start, kHeaderBytes));
}

// Decodes a whole body into `fields`, in order; kInvalidArgument naming the first bad
// field, or for trailing bytes.
template <typename... Fields>
Status DecodeBody(ByteSpan body, Fields*... fields) {
  WireReader r(body);
  // A decoder that refuses a value without recording why still fails the body.
  if (!(Decode(r, fields) && ...) && r.ok()) {
    r.Fail("body", "a field's value is refused");
  }
  return r.Finish();
}

// Decodes `body` as the frame (op, flags) would be decoded by its receiver and discards
// the result: the single entry point of the fuzz target, and a check that every op in
// the table has a decoder. kData is opaque.
Status ValidateBody(Op op, uint16_t flags, ByteSpan body);

// "host:port" or "[v6-address]:port", as in --listen and RemoteStoreOptions::endpoints.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// kInvalidArgument naming `field` unless `text` is a non-empty host, a colon and a port
// 0..65535.
Result<HostPort> ParseHostPort(std::string_view text, std::string_view field);

// Compares secrets in time that depends only on their lengths, not on where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace oc::storage::rpc
