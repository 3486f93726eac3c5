// Descriptor PUT (kv_engine.h): N chunk objects with their ChunkShape (so each one's extents
// are one contiguous layer range), bytes pulled from the client's registered buffer over UCX
// or read chunk-major from a ChunkSource, stored all or nothing
// (docs/decisions/kv-descriptor-put-all-or-nothing.md): every chunk is written into one
// ObjectGroupWriter as its bytes arrive, invisible, and the group commits only after the last byte
// arrived and the source reported its verified end. Any error before that drops the group, which
// frees what it wrote; no chunk of the request becomes visible and earlier versions stay. With
// x-oc-if-none-match every chunk's bytes are still received and staged: the commit decides which
// keys exist (atomically with the writes) and frees the bytes of those
// (docs/decisions/s3-compat-bucket-delete-multipart-parts.md).

#include <fmt/core.h>

#include "data_plane/ucx_data_plane.h"
#include "kv/kv_engine.h"
#include "oc/descriptor/layout.h"

namespace oc::storage::kv {
namespace {

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

Result<KvPutReport> PutChunks(SliceSource& source, std::string_view bucket,
                              const descriptor::Descriptor& d, ChunkSource* body,
                              UcxDataPlane* plane, const KvOptions& options) {
  const Clock::time_point started = Clock::now();
  OC_RETURN_IF_ERROR(CheckDescriptor(d));
  if (d.target.has_value() ? plane == nullptr : body == nullptr) {
    return Status::InvalidArgument("body", "no source for the chunk bytes");
  }
  OC_ASSIGN_OR_RETURN(
      descriptor::ChunkGeometry g,
      descriptor::ChunkGeometry::Make(d.layout, d.num_chunks(), d.num_layers, d.layer_bytes));
  const uint64_t chunk_bytes = g.chunk_bytes();
  KvPutReport report;
  report.request_id = d.request_id;
  PutOptions put;
  put.chunk = ChunkShape{d.layout, d.num_layers, d.layer_bytes};
  put.expected_size = chunk_bytes;
  // Create-if-absent (docs/protocol.md): decided by the group's commit, per chunk.
  put.if_none_match = d.if_none_match;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectGroupWriter> group, source.PutGroup(bucket));
  // A source UCX attached here (the client's UCX allocated it on this host) is read in place:
  // its bytes go from the client's memory straight into the group, as a lent body's do, with
  // no staging copy (docs/decisions/kv-put-pull-in-place.md). Others are pulled with gets.
  std::optional<UcxDataPlane::InPlaceSource> in_place;
  if (d.target.has_value()) {
    OC_ASSIGN_OR_RETURN(in_place, plane->SourceInPlace(*d.target));
    if (in_place.has_value() && in_place->bytes.size() < g.total_bytes()) {
      return Status::OutOfRange(fmt::format("source of {} bytes for a {}-byte PUT",
                                            in_place->bytes.size(), g.total_bytes()));
    }
  }

  auto receive = [&](uint64_t chunk) -> Status {
    // Chunk j's bytes sit at [j·L·S, (j+1)·L·S) of the source: its chunk-major offset.
    const uint64_t base = g.DestinationOffset(descriptor::Delivery::kChunkMajor, 0, chunk);
    uint64_t done = 0;
    while (done < chunk_bytes) {
      const Clock::time_point t0 = Clock::now();
      if (in_place.has_value()) {
        const uint64_t n = std::min<uint64_t>(chunk_bytes - done, options.put_read_bytes);
        OC_RETURN_IF_ERROR(group->Append(in_place->bytes.subspan(base + done, n)));
        done += n;
        continue;
      }
      if (d.target.has_value()) {
        OC_ASSIGN_OR_RETURN(StagingBuffer staging, plane->AcquireStaging());
        const uint64_t n = std::min<uint64_t>(chunk_bytes - done, staging.bytes().size());
        OC_RETURN_IF_ERROR(plane->ReadRemote(*d.target, base + done, staging, n));
        report.receive_us += Micros(Clock::now() - t0);
        OC_RETURN_IF_ERROR(group->Append(ByteSpan(staging.bytes().data(), n)));
        done += n;
        continue;
      }
      // The source's bytes go straight into the group's extent buffer: the only copy between
      // a pipe that lends its queued bytes and the store
      // (docs/decisions/put-copies-lent-buffers.md); a source that cannot lend reads into its own
      // buffer first (kv.h).
      const uint64_t want = std::min<uint64_t>(chunk_bytes - done, options.put_read_bytes);
      OC_ASSIGN_OR_RETURN(ByteSpan piece, body->Peek(want));
      report.receive_us += Micros(Clock::now() - t0);
      if (piece.empty()) {
        return Status(Code::kInvalidArgument, Subject::kEntity, "",
                      fmt::format("body ended after {} of {} bytes", base + done, g.total_bytes()));
      }
      if (piece.size() > want) {
        return Status::Internal("chunk source returned more bytes than asked");
      }
      OC_RETURN_IF_ERROR(group->Append(piece));
      OC_RETURN_IF_ERROR(body->Consume(piece.size()));
      done += piece.size();
    }
    return Status::Ok();
  };

  // Every return before the group's Commit drops it: nothing of the request is visible.
  for (uint64_t j = 0; j < d.num_chunks(); ++j) {
    OC_RETURN_IF_ERROR(group->Begin(d.ObjectName(j), put));
    OC_RETURN_IF_ERROR(receive(j));
  }
  if (!d.target.has_value()) {
    // The source's verified end (kv.h): a checked body reads 0 only once every check passed.
    OC_ASSIGN_OR_RETURN(ByteSpan extra, body->Peek(1));
    if (!extra.empty()) {
      return Status(Code::kInvalidArgument, Subject::kEntity, "",
                    fmt::format("body longer than the {} bytes of N·L·S", g.total_bytes()));
    }
  }
  const Clock::time_point commit_start = Clock::now();
  OC_ASSIGN_OR_RETURN(std::vector<GroupCommitted> committed, group->Commit());
  report.commit_wait_us = Micros(Clock::now() - commit_start);
  report.chunks = committed.size();
  if (d.if_none_match) {
    report.existed.reserve(committed.size());
    for (const GroupCommitted& c : committed) {
      report.existed.push_back(c.existed);
    }
  }
  report.bytes = g.total_bytes();
  report.total_us = Micros(Clock::now() - started);
  return report;
}

}  // namespace oc::storage::kv
