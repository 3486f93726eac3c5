// objectcache._native's put_chunks (binding.h): the descriptor PUTs of one call, in batches,
// with the probe of if_absent. Pure C++ over liboc_client: it runs with the GIL released and
// touches no Python object.
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "binding.h"
#include "oc/client/target_buffer.h"

namespace oc::python {
namespace {

descriptor::Descriptor SubDescriptor(const descriptor::Descriptor& d, uint64_t first,
                                     uint64_t count) {
  descriptor::Descriptor sub = d;
  if (const auto* k = std::get_if<descriptor::CompactKeys>(&d.keys)) {
    sub.keys =
        descriptor::CompactKeys{k->prefix,
                                {k->hashes.begin() + static_cast<std::ptrdiff_t>(first),
                                 k->hashes.begin() + static_cast<std::ptrdiff_t>(first + count)}};
  } else {
    const auto& names = std::get<descriptor::ExplicitKeys>(d.keys).names;
    sub.keys =
        descriptor::ExplicitKeys{{names.begin() + static_cast<std::ptrdiff_t>(first),
                                  names.begin() + static_cast<std::ptrdiff_t>(first + count)}};
  }
  return sub;
}

}  // namespace

// Stores the chunks of `d` from `body` (HTTP) or from `source` at `offset` (UCX pull). With
// `if_absent`, one probe first so chunks already present are not sent ("exists"), and the
// PUTs of the rest carry the descriptor's create-if-absent field (docs/protocol.md), so a
// writer that stored one of them between the probe and the PUT keeps it: the server reports
// that chunk as existing ("exists") and the first writer's bytes stay. Chunks go in runs of at
// most `batch` keys; a failed run marks its keys failed and the next run is still tried. No
// GIL needed.
PutReport PutChunks(client::Client& cl, const std::string& bucket, const descriptor::Descriptor& d,
                    ByteSpan body, client::TargetBuffer* source, uint64_t offset, bool if_absent,
                    uint64_t batch) {
  const uint64_t n = d.num_chunks();
  const uint64_t chunk_bytes = uint64_t{d.num_layers} * d.layer_bytes;
  PutReport report;
  report.status.assign(n, "stored");
  std::vector<bool> send(n, true);
  if (if_absent) {
    Result<client::ProbeResult> probe = cl.ProbeChunks(bucket, d);
    if (!probe.has_value()) {
      for (uint64_t j = 0; j < n; ++j) {
        report.status[j] = "failed";
        report.errors.emplace_back(j, probe.error());
      }
      return report;
    }
    for (uint64_t j = 0; j < n; ++j) {
      if (probe->sizes[j].has_value()) {
        send[j] = false;
        report.status[j] = "exists";
      }
    }
  }
  uint64_t j = 0;
  while (j < n) {
    if (!send[j]) {
      ++j;
      continue;
    }
    uint64_t count = 0;
    while (j + count < n && send[j + count] && count < batch) {
      ++count;
    }
    descriptor::Descriptor sub = count == n ? d : SubDescriptor(d, j, count);
    sub.if_none_match = if_absent;
    Result<client::PutChunksResult> r =
        source != nullptr
            ? cl.PutChunks(bucket, sub, *source, offset + j * chunk_bytes)
            : cl.PutChunks(bucket, sub, body.subspan(j * chunk_bytes, count * chunk_bytes));
    for (uint64_t k = j; k < j + count; ++k) {
      if (!r.has_value()) {
        report.status[k] = "failed";
        report.errors.emplace_back(k, r.error());
      }
    }
    if (r.has_value()) {
      for (uint64_t k = 0; k < count && k < r->existed.size(); ++k) {
        if (r->existed[k]) {
          report.status[j + k] = "exists";
        }
      }
      report.chunks += r->chunks;
      report.bytes += r->bytes;
      report.request_ids.push_back(r->request_id);
    }
    j += count;
  }
  return report;
}

}  // namespace oc::python
