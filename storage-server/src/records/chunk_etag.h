#pragma once
// ChunkEtag: the ETag of an object stored by a descriptor PUT (Store::PutGroup), computed as
// its bytes stream through a group writer. A chunk's ETag is not an MD5 of its body
// (docs/protocol.md, "Responses"; docs/decisions/descriptor-put-chunk-etag.md):
//
//   lowercase hex of XXH3-128 over the little-endian u64 XXH3-64 of each piece, then "-1"
//
// where the pieces are the object's consecutive ranges of PieceBytes(options) bytes (the
// chunk's contiguous layer range: S in kv_l2td, S/2 in kv_2ltd; the last may be shorter),
// or the whole object as one piece without a chunk shape. The dash says "not an MD5" to S3
// clients, as a multipart ETag does. A piece is an extent of the RocksDB layouts, so the
// XXH3-64 that a data file's frame or a blob extent's trailer already carries is reused
// (AddPieceHash) instead of hashing the bytes twice; RADOS and the SST layout hash the bytes
// here (Update). Both backends give the same ETag for the same bytes and shape.
// One instance per object; not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/storage/types.h"

namespace oc::storage {

class ChunkEtag {
 public:
  // `piece_bytes` 0: the object is one piece.
  explicit ChunkEtag(uint64_t piece_bytes);
  ~ChunkEtag();
  ChunkEtag(const ChunkEtag&) = delete;
  ChunkEtag& operator=(const ChunkEtag&) = delete;

  // Pieces of an object written with `options`: the chunk's layer range, else 0 (one piece).
  static uint64_t PieceBytes(const PutOptions& options);

  // Hashes the next bytes of the object.
  void Update(ByteSpan data);
  // Takes `hash`, the XXH3-64 of the next whole piece (or of the last, shorter one), computed
  // elsewhere. REQUIRES: no bytes of a piece were given to Update since the last piece ended.
  void AddPieceHash(uint64_t hash);
  // The ETag (no quotes); the object is spent afterwards.
  std::string Finish();

 private:
  void EndPiece();

  const uint64_t piece_bytes_;
  uint64_t in_piece_ = 0;  // bytes of the current piece given to Update
  struct State;
  std::unique_ptr<State> state_;   // XXH3-64 streaming state of the current piece
  std::vector<std::byte> hashes_;  // little-endian XXH3-64 of every piece ended
};

}  // namespace oc::storage
