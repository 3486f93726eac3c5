#pragma once
// DataStream: writes the bytes of one new version into its data objects (rados_keys.h
// DataOid), in pieces of at most kPieceBytes with at most kPiecesInFlight writes in flight.
// The first piece of each data object is a write_full with the oc.key and oc.ver xattrs (for
// the orphan scrub) in the same op; later pieces write at their offset (RADOS applies one client's
// ops on one object in order). Nothing refers to the data until a commit op names the version, so
// pieces need no atomicity. librados copies a piece when the op is built, so one piece buffer
// serves the whole stream. The MD5 and the body's checks are the writer's
// (object/checking_writer.h); a descriptor PUT's chunk is hashed here for its ChunkEtag
// (records/chunk_etag.h). Not thread-safe: one writer's.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "oc/common/bytes.h"
#include "oc/common/status.h"
#include "rados/rados_wrap.h"
#include "records/chunk_etag.h"
#include "records/meta_codec.h"

namespace oc::storage::rados {

// Largest write op of a stream (far below osd_max_write_size, 90 MB in Ceph 16).
inline constexpr uint64_t kPieceBytes = 4ull << 20;
// Pieces one stream keeps in flight.
inline constexpr size_t kPiecesInFlight = 4;

// What a DataStream hashes its bytes for.
struct StreamHashes {
  bool chunk_etag = false;
  uint64_t chunk_piece_bytes = 0;  // ChunkEtag::PieceBytes, with chunk_etag
};

class DataStream {
 public:
  // `segment` has the version id and extent (data object) size; its size grows as bytes come.
  DataStream(rados_ioctx_t io, uint64_t bucket_id, std::string key, Segment segment,
             StreamHashes hashes = {});
  ~DataStream();  // waits for writes in flight
  DataStream(const DataStream&) = delete;
  DataStream& operator=(const DataStream&) = delete;

  Status Append(ByteSpan data);
  // Sends the last piece and computes the digest, without waiting; frees the piece buffer.
  Status Close();
  // Close(), then waits for every write; the first error of any.
  Status Finish();
  // The ChunkEtag of every byte appended. REQUIRES: Close() returned OK, hashes.chunk_etag.
  const std::string& chunk_etag() const { return chunk_etag_; }
  const Segment& segment() const { return segment_; }
  // Waits for writes in flight, then removes every data object written (best effort).
  void Discard();

 private:
  Status Flush();
  Status WaitOldest();

  struct Pending {
    WriteOp op;
    Completion c;
  };
  const rados_ioctx_t io_;
  const uint64_t bucket_id_;
  const std::string key_;
  Segment segment_;
  std::optional<ChunkEtag> etag_;
  std::string chunk_etag_;
  std::string piece_;
  uint64_t piece_at_ = 0;  // object offset of piece_'s first byte
  std::deque<std::unique_ptr<Pending>> pending_;
  Status failed_;
  bool closed_ = false;
};

}  // namespace oc::storage::rados
