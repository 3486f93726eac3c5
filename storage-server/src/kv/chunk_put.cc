// Descriptor PUT (kv_engine.h): N chunk objects, each stored atomically with its ChunkShape
// (so its extents are one contiguous layer range), bytes pulled from the client's registered
// buffer over UCX or read chunk-major from a ChunkSource. Chunk j is committed on a helper
// thread while chunk j+1 arrives; at most max_pending_commits run at once, and concurrent
// synced commits share WAL fsyncs through RocksDB's write groups (docs/decisions.md,
// "KV: descriptor PUT commits").

#include <deque>
#include <future>

#include <fmt/core.h>

#include "data_plane/ucx_data_plane.h"
#include "kv/kv_engine.h"
#include "oc/descriptor/layout.h"

namespace oc::storage::kv {
namespace {

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

using Commit = std::future<Result<ObjectMeta>>;

}  // namespace

Result<KvPutReport> PutChunks(Store& store, std::string_view bucket,
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
  std::vector<std::byte> heap;
  if (!d.target.has_value()) {
    heap.resize(std::min(options.put_read_bytes, chunk_bytes));
  }
  PutOptions put;
  put.chunk = ChunkShape{d.layout, d.num_layers, d.layer_bytes};
  put.expected_size = chunk_bytes;

  std::deque<Commit> commits;
  Status first_error;
  auto settle = [&](Commit& c) {
    const Clock::time_point t0 = Clock::now();
    Result<ObjectMeta> r = c.get();
    report.commit_wait_us += Micros(Clock::now() - t0);
    if (r.has_value()) {
      ++report.chunks;
      report.bytes += chunk_bytes;
    } else if (first_error.ok()) {
      first_error = std::move(r).error();
    }
  };
  auto receive = [&](ObjectWriter& writer, uint64_t chunk) -> Status {
    // Chunk j's bytes sit at [j·L·S, (j+1)·L·S) of the source: its chunk-major offset.
    const uint64_t base = g.DestinationOffset(descriptor::Delivery::kChunkMajor, 0, chunk);
    uint64_t done = 0;
    while (done < chunk_bytes) {
      const Clock::time_point t0 = Clock::now();
      if (d.target.has_value()) {
        OC_ASSIGN_OR_RETURN(StagingBuffer staging, plane->AcquireStaging());
        const uint64_t n = std::min<uint64_t>(chunk_bytes - done, staging.bytes().size());
        OC_RETURN_IF_ERROR(plane->ReadRemote(*d.target, base + done, staging, n));
        report.receive_us += Micros(Clock::now() - t0);
        OC_RETURN_IF_ERROR(writer.Append(ByteSpan(staging.bytes().data(), n)));
        done += n;
        continue;
      }
      const uint64_t want = std::min<uint64_t>(chunk_bytes - done, heap.size());
      OC_ASSIGN_OR_RETURN(uint64_t n, body->Read(MutableByteSpan(heap.data(), want)));
      report.receive_us += Micros(Clock::now() - t0);
      if (n == 0) {
        return Status(Code::kInvalidArgument, Subject::kEntity, "",
                      fmt::format("body ended after {} of {} bytes", base + done, g.total_bytes()));
      }
      if (n > want) {
        return Status::Internal("chunk source returned more bytes than asked");
      }
      OC_RETURN_IF_ERROR(writer.Append(ByteSpan(heap.data(), n)));
      done += n;
    }
    return Status::Ok();
  };

  for (uint64_t j = 0; j < d.num_chunks() && first_error.ok(); ++j) {
    Result<std::unique_ptr<ObjectWriter>> opened =
        store.Put({std::string(bucket), d.ObjectName(j)}, put);
    if (!opened.has_value()) {
      first_error = std::move(opened).error();
      break;
    }
    std::unique_ptr<ObjectWriter> writer = std::move(*opened);
    if (Status s = receive(*writer, j); !s.ok()) {
      first_error = std::move(s);
      break;  // the writer is discarded: nothing of chunk j becomes visible
    }
    commits.push_back(
        std::async(std::launch::async, [w = std::move(writer)]() { return w->Commit(); }));
    while (commits.size() >= options.max_pending_commits) {
      settle(commits.front());
      commits.pop_front();
    }
  }
  for (Commit& c : commits) {
    settle(c);
  }
  if (first_error.ok() && body != nullptr && !d.target.has_value()) {
    std::byte extra{};
    OC_ASSIGN_OR_RETURN(uint64_t n, body->Read(MutableByteSpan(&extra, 1)));
    if (n != 0) {
      first_error = Status(Code::kInvalidArgument, Subject::kEntity, "",
                           fmt::format("body longer than the {} bytes of N·L·S", g.total_bytes()));
    }
  }
  OC_RETURN_IF_ERROR(first_error);
  report.total_us = Micros(Clock::now() - started);
  return report;
}

}  // namespace oc::storage::kv
