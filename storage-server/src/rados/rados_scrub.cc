// RadosStore's orphan scrub: what a crash leaves behind. A writer that dies between writing
// data objects and its commit op leaves data objects no record names; a DeleteBucket that
// dies after removing the registry entry leaves index shards and data of a bucket that is
// gone; a part committed while its upload completed leaves an m/ entry without its upload.
// Nothing visible is ever partial (rados_store.h), so none of this needs repair at open;
// the GC leader scrubs once a day, and tests call RunScrubOnce.
//
// One pass: (1) list the namespace; (2) read the bucket registry; (3) per bucket with data
// objects, read every shard's entries in the order m/, u/, o/, g/ and collect the versions
// they name. That order sees every version that moves between entries during the read (a
// part completes m/ -> o/, a replacement o/ -> g/, a replaced part m/ -> g/: the later kind is
// always read later). (4) Remove the data objects no entry names, and those of unregistered
// buckets, and the index shards of unregistered buckets, all only once older than
// orphan_min_age: an upload in flight wrote its data before the listing and commits after
// the read, so that age must exceed the longest upload. m/ entries whose upload is gone go
// to the GC with the entry removed, under a compare of their value.

#include <ctime>
#include <map>
#include <set>

#include "oc/common/log.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

using rados::FromRados;

const Logger kLog{"rados-scrub"};

struct DataObject {
  std::string oid;
  rados::DataOidParts parts;
};

using VersionSet = std::set<std::pair<uint64_t, uint64_t>>;  // (writer, seq)

}  // namespace

Result<RadosStore::ScrubReport> RadosStore::ScrubPass() {
  ScrubReport report;
  const std::chrono::seconds min_age =
      std::chrono::duration_cast<std::chrono::seconds>(options_.rados.orphan_min_age);
  const time_t now = std::time(nullptr);
  auto old_enough = [&](const std::string& oid) {
    if (min_age.count() == 0) {
      return true;
    }
    uint64_t size = 0;
    time_t mtime = 0;
    return rados_stat(io(), oid.c_str(), &size, &mtime) == 0 && now - mtime >= min_age.count();
  };

  // (1) The namespace.
  std::map<uint64_t, std::vector<DataObject>> data;  // by bucket id
  std::vector<std::pair<std::string, uint64_t>> shards;
  {
    rados_list_ctx_t ctx = nullptr;
    OC_RETURN_IF_ERROR(FromRados(rados_nobjects_list_open(io(), &ctx), "listing objects"));
    for (;;) {
      const char* entry = nullptr;
      const int rc = rados_nobjects_list_next(ctx, &entry, nullptr, nullptr);
      if (rc == -ENOENT) {
        break;
      }
      if (rc < 0) {
        rados_nobjects_list_close(ctx);
        return FromRados(rc, "listing objects");
      }
      DataObject d;
      uint64_t bucket_id = 0;
      if (rados::ParseDataOid(entry, &d.parts)) {
        d.oid = entry;
        data[d.parts.bucket_id].push_back(std::move(d));
      } else if (rados::ParseIndexOid(entry, &bucket_id)) {
        shards.emplace_back(entry, bucket_id);
      }
    }
    rados_nobjects_list_close(ctx);
  }
  // (2) The registry, read after the listing: a bucket created meanwhile is registered.
  OC_ASSIGN_OR_RETURN(std::vector<rados::RadosBucketRecord> buckets, AllBuckets());
  std::map<uint64_t, uint32_t> registered;
  for (const rados::RadosBucketRecord& b : buckets) {
    registered[b.bucket_id] = b.index_shards;
  }
  std::vector<std::string> doomed;
  for (const auto& [oid, id] : shards) {
    if (!registered.contains(id) && old_enough(oid)) {
      doomed.push_back(oid);
    }
  }
  report.index_objects = RemoveObjects(doomed);
  doomed.clear();

  // (3) and (4), bucket by bucket.
  for (auto& [bucket_id, objects] : data) {
    OC_RETURN_IF_ERROR(KeepGcLead());
    auto reg = registered.find(bucket_id);
    if (reg == registered.end()) {
      for (const DataObject& d : objects) {
        if (old_enough(d.oid)) {
          doomed.push_back(d.oid);
        }
      }
      continue;
    }
    VersionSet referenced;
    bool complete = true;
    for (uint32_t s = 0; s < reg->second && complete; ++s) {
      const std::string oid = rados::IndexOid(bucket_id, s);
      std::map<std::string, std::string> parts;  // m/ key -> value
      std::set<std::string> uploads;             // ids of open uploads
      auto note = [&](std::string_view k, std::string_view v) {
        for (const Segment& seg : SegmentsOfEntry(k, v)) {
          referenced.emplace(seg.writer, seg.data_id);
        }
      };
      Status st = ScanOmap(oid, rados::kPartPrefix, "",
                           [&](std::string_view k, std::string_view v) -> Result<bool> {
                             note(k, v);
                             parts.emplace(k, v);
                             return true;
                           });
      if (st.ok()) {
        st = ScanOmap(oid, rados::kUploadPrefix, "",
                      [&](std::string_view k, std::string_view) -> Result<bool> {
                        std::string name;
                        std::string id;
                        if (rados::ParseUploadOmapKey(k, &name, &id)) {
                          uploads.insert(std::move(id));
                        }
                        return true;
                      });
      }
      for (const char* prefix : {rados::kObjectPrefix, rados::kGcPrefix}) {
        if (st.ok()) {
          st = ScanOmap(oid, prefix, "",
                        [&](std::string_view k, std::string_view v) -> Result<bool> {
                          note(k, v);
                          return true;
                        });
        }
      }
      if (!st.ok()) {
        // A shard that cannot be read (or vanished: the bucket is being deleted) means the
        // references are unknown: spare this bucket's data.
        kLog.Warn("scrub skips bucket {:016x}: {}", bucket_id, st.ToString());
        complete = false;
        break;
      }
      // Parts whose upload is gone: to the GC, unless the entry changed meanwhile.
      const int64_t due = RadosNowUnixMs() + options_.rados.gc_min_wait.count();
      for (const auto& [key, value] : parts) {
        std::string id;
        uint32_t number = 0;
        if (!rados::ParsePartOmapKey(key, &id, &number) || uploads.contains(id)) {
          continue;
        }
        rados::WriteOp op;
        int cmp = 0;
        op.CmpXattr(rados::kStateXattr, rados::kStateLive);
        op.OmapCmp(key, value, &cmp);
        op.OmapRm({key});
        ObjectRecord gc;
        gc.segments = SegmentsOfEntry(key, value);
        if (!gc.segments.empty() && gc.segments.front().size > 0) {
          gc.meta.size = gc.segments.front().size;
          op.OmapSet({{rados::GcOmapKey(due, gc.segments.front()), EncodeObjectRecord(gc)}});
        }
        if (op.Operate(io(), oid) >= 0) {
          ++report.parts;
        }
      }
    }
    if (!complete) {
      continue;
    }
    for (const DataObject& d : objects) {
      if (!referenced.contains({d.parts.writer, d.parts.seq}) && old_enough(d.oid)) {
        doomed.push_back(d.oid);
      }
    }
  }
  report.data_objects = RemoveObjects(doomed);
  return report;
}

}  // namespace oc::storage
