#pragma once
// The S3 rules of a written body, once for every backend and every writer (store.h
// ObjectWriter::Commit, ObjectGroupWriter): count the bytes, compute the MD5 (a plain object's
// or part's ETag, or only to check a Content-MD5), and at the end refuse a body whose size is
// not PutOptions::expected_size (kInvalidArgument/kEntity, field "Content-Length") or whose
// MD5 is not PutOptions::content_md5 (kInvalidArgument/kDigest, field "Content-MD5").
//
//   BodyCheck       the counting, hashing and checking alone; a group writer keeps one per
//                   member (rocks_group.cc, rados_group.cc).
//   CheckingWriter  an ObjectWriter over a backend's RawBodyWriter (the bytes' way to storage
//                   and the commit): the writer state (spent, lends, first error), the lend API
//                   and AddHeader are here, so an object or part writer of a backend only moves
//                   bytes and commits (rocks_write.cc, rados_write.cc, rados_multipart.cc).
// Not thread-safe: one writer's.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/store.h"
#include "oc/storage/types.h"
#include "records/md5.h"

namespace oc::storage {

class BodyCheck {
 public:
  // Checks against `options` (expected_size, content_md5). `etag_md5`: compute the MD5 even
  // without a Content-MD5 to check (the ETag needs it).
  BodyCheck(const PutOptions& options, bool etag_md5);
  BodyCheck(const BodyCheck&) = delete;
  BodyCheck& operator=(const BodyCheck&) = delete;

  void Update(ByteSpan data);
  // Ends the body: its MD5 and the checks, size first. `member` names a group's object in
  // the size message ("object <member> has N bytes"); empty for a lone body ("body has").
  Status Finish(std::string_view member = {});
  uint64_t size() const { return size_; }
  // REQUIRES: Finish was called and the MD5 computed (etag_md5 or a content_md5).
  const Md5Digest& md5() const { return *digest_; }

 private:
  const std::optional<uint64_t> expected_size_;
  const std::optional<Md5Digest> content_md5_;
  std::optional<Md5> md5_;
  std::optional<Md5Digest> digest_;
  uint64_t size_ = 0;
};

// A backend's way to store one object's or part's bytes and commit them, under a
// CheckingWriter that calls it in order: Write/Lend/Lent while the body streams, then Finish,
// then Commit, or Discard instead after any error or check that fails.
class RawBodyWriter {
 public:
  virtual ~RawBodyWriter() = default;
  // The next bytes of the body.
  virtual Status Write(ByteSpan data) = 0;
  // Memory of the backend's own for the next bytes (store.h ObjectWriter::AppendSpace): at
  // least min(min_bytes, max_bytes), at most max_bytes; an empty span if it has none, and the
  // CheckingWriter lends scratch memory that comes back through Write. REQUIRES: max_bytes > 0.
  virtual MutableByteSpan Lend(uint64_t min_bytes, uint64_t max_bytes) {
    (void)min_bytes;
    (void)max_bytes;
    return {};
  }
  // The first n bytes of what Lend returned are the body's next bytes. REQUIRES: n <= lent.
  virtual Status Lent(uint64_t n) {
    (void)n;
    return Status::FailedPrecondition(Subject::kEntity, "Appended without a lend");
  }
  // Writes out everything still buffered (before the body's checks).
  virtual Status Finish() = 0;
  // Makes the body visible: `options` carries the headers added by AddHeader; `check` the
  // body's size and MD5 (computed when the CheckingWriter was built with etag_md5).
  virtual Result<ObjectMeta> Commit(const PutOptions& options, const BodyCheck& check) = 0;
  // Frees what was written; the writer is spent.
  virtual void Discard() = 0;
};

class CheckingWriter final : public ObjectWriter {
 public:
  CheckingWriter(PutOptions options, bool etag_md5, std::unique_ptr<RawBodyWriter> raw);
  ~CheckingWriter() override;  // discards the raw writer's bytes unless committed

  Status Append(ByteSpan data) override;
  Result<MutableByteSpan> AppendSpace(uint64_t min_bytes, uint64_t max_bytes) override;
  Status Appended(uint64_t n) override;
  Status AddHeader(std::string name, std::string value) override;
  Result<ObjectMeta> Commit() override;

 private:
  // kFailedPrecondition after Commit or with a lend outstanding; the first write error.
  Status Usable() const;

  PutOptions options_;  // AddHeader appends to its headers
  BodyCheck check_;
  std::unique_ptr<RawBodyWriter> raw_;
  std::optional<MutableByteSpan> lent_;  // the raw writer's memory lent by AppendSpace
  Status failed_;
  bool spent_ = false;
};

}  // namespace oc::storage
