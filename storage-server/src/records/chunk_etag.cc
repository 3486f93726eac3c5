#include "records/chunk_etag.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>

#include <algorithm>

namespace oc::storage {

struct ChunkEtag::State {
  XXH3_state_t xxh;
};

ChunkEtag::ChunkEtag(uint64_t piece_bytes)
    : piece_bytes_(piece_bytes), state_(std::make_unique<State>()) {
  XXH3_64bits_reset(&state_->xxh);
}

ChunkEtag::~ChunkEtag() = default;

uint64_t ChunkEtag::PieceBytes(const PutOptions& options) {
  if (!options.chunk.has_value()) {
    return 0;
  }
  const ChunkShape& c = *options.chunk;
  return c.layout == descriptor::StoredLayout::kL2TD ? c.layer_bytes : c.layer_bytes / 2;
}

void ChunkEtag::Update(ByteSpan data) {
  while (!data.empty()) {
    const uint64_t n =
        piece_bytes_ == 0 ? data.size() : std::min<uint64_t>(data.size(), piece_bytes_ - in_piece_);
    XXH3_64bits_update(&state_->xxh, data.data(), n);
    in_piece_ += n;
    data = data.subspan(n);
    if (piece_bytes_ != 0 && in_piece_ == piece_bytes_) {
      EndPiece();
    }
  }
}

void ChunkEtag::EndPiece() {
  AddPieceHash(XXH3_64bits_digest(&state_->xxh));
  XXH3_64bits_reset(&state_->xxh);
  in_piece_ = 0;
}

void ChunkEtag::AddPieceHash(uint64_t hash) {
  std::byte le[8];
  PutLittleEndian64(hash, le);
  hashes_.insert(hashes_.end(), le, le + 8);
}

std::string ChunkEtag::Finish() {
  if (in_piece_ > 0 || (piece_bytes_ == 0 && hashes_.empty())) {
    EndPiece();  // the last, shorter piece; or the one piece of an unshaped object
  }
  const XXH128_hash_t h = XXH3_128bits(hashes_.data(), hashes_.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, h);
  return HexEncode(ByteSpan(reinterpret_cast<const std::byte*>(canonical.digest), 16)) + "-1";
}

}  // namespace oc::storage
