// Listing of objects and multipart uploads: the S3 rules are object/list_walker.h's; here is
// only the cursor they walk, a RocksDB iterator over one bucket's keys of the objects or the
// uploads column family, on a snapshot. Upload keys are "name\0upload id" (store_keys.h), so
// the byte order of the keys is the (name, upload id) order the walker needs.

#include <rocksdb/snapshot.h>

#include "object/list_walker.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {
namespace {

class RocksListCursor final : public ListCursor {
 public:
  // `ro` reads the snapshot the caller holds; `uploads`: keys carry an upload id.
  RocksListCursor(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, rocksdb::ReadOptions ro,
                  std::string_view bucket, bool uploads)
      : db_(db), cf_(cf), ro_(ro), base_(BucketPrefix(bucket)), uploads_(uploads) {}

  Status Seek(std::string_view prefix, const ListMarker& marker) override {
    const std::string full_prefix = base_ + std::string(prefix);
    upper_ = PrefixSuccessor(full_prefix);  // never empty: base_ ends in '/'
    upper_slice_ = rocksdb::Slice(upper_);
    ro_.iterate_upper_bound = &upper_slice_;
    it_.reset(db_->NewIterator(ro_, cf_));
    std::string start;
    if (!marker.name.empty()) {
      // Every upload of the marker's key sorts before "key\x01" (names hold no NUL).
      start = base_ + std::string(marker.name);
      if (uploads_) {
        start +=
            marker.upload_id.empty() ? std::string("\x01") : '\0' + std::string(marker.upload_id);
      }
    }
    it_->Seek(std::max(start, full_prefix));
    return Status::Ok();
  }

  Result<bool> Current(ListItem* item) override {
    if (!it_->Valid()) {
      OC_RETURN_IF_ERROR(FromRocks(it_->status()));
      return false;
    }
    const std::string_view rest = it_->key().ToStringView().substr(base_.size());
    *item = ListItem{rest, {}, it_->value().ToStringView()};
    if (uploads_) {
      const size_t nul = rest.find('\0');
      if (nul == std::string_view::npos) {
        return Status::Corruption("malformed upload key");
      }
      item->name = rest.substr(0, nul);
      item->upload_id = rest.substr(nul + 1);
    }
    return true;
  }

  void Next() override { it_->Next(); }

  void SkipPrefix(std::string_view name_prefix) override {
    it_->Seek(PrefixSuccessor(base_ + std::string(name_prefix)));
  }

 private:
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  rocksdb::ReadOptions ro_;
  const std::string base_;
  const bool uploads_;
  std::string upper_;
  rocksdb::Slice upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

Result<ListResult> RocksStore::List(std::string_view bucket, const ListOptions& options) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  RocksListCursor cursor(db_.get(), objects_cf_, ro, bucket, /*uploads=*/false);
  return ListObjects(cursor, options);
}

Result<ListUploadsResult> RocksStore::ListMultipartUploads(std::string_view bucket,
                                                           const ListUploadsOptions& options) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  RocksListCursor cursor(db_.get(), uploads_cf_, ro, bucket, /*uploads=*/true);
  return ListUploads(cursor, options);
}

}  // namespace oc::storage
