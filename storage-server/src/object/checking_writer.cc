#include "object/checking_writer.h"

#include <utility>

namespace oc::storage {

BodyCheck::BodyCheck(const PutOptions& options, bool etag_md5)
    : expected_size_(options.expected_size), content_md5_(options.content_md5) {
  if (etag_md5 || content_md5_.has_value()) {
    md5_.emplace();
  }
}

void BodyCheck::Update(ByteSpan data) {
  size_ += data.size();
  if (md5_.has_value()) {
    md5_->Update(data);
  }
}

Status BodyCheck::Finish(std::string_view member) {
  if (md5_.has_value()) {
    digest_ = md5_->Finish();
    md5_.reset();
  }
  if (expected_size_.has_value() && *expected_size_ != size_) {
    const std::string what = member.empty() ? "body" : "object " + std::string(member);
    return Status(Code::kInvalidArgument, Subject::kEntity, "Content-Length",
                  what + " has " + std::to_string(size_) + " bytes, expected " +
                      std::to_string(*expected_size_));
  }
  if (content_md5_.has_value() && content_md5_ != digest_) {
    return Status(Code::kInvalidArgument, Subject::kDigest, "Content-MD5",
                  "Content-MD5 does not match the body");
  }
  return Status::Ok();
}

CheckingWriter::CheckingWriter(PutOptions options, bool etag_md5,
                               std::unique_ptr<RawBodyWriter> raw)
    : options_(std::move(options)), check_(options_, etag_md5), raw_(std::move(raw)) {}

CheckingWriter::~CheckingWriter() {
  if (!spent_) {
    raw_->Discard();
  }
}

Status CheckingWriter::Usable() const {
  if (spent_) {
    return Status::FailedPrecondition(Subject::kEntity, "writer already committed");
  }
  if (lent_.has_value()) {
    return Status::FailedPrecondition(Subject::kEntity, "a lend is outstanding");
  }
  return failed_;
}

Status CheckingWriter::Append(ByteSpan data) {
  OC_RETURN_IF_ERROR(Usable());
  check_.Update(data);
  failed_ = raw_->Write(data);
  return failed_;
}

Result<MutableByteSpan> CheckingWriter::AppendSpace(uint64_t min_bytes, uint64_t max_bytes) {
  OC_RETURN_IF_ERROR(Usable());
  if (max_bytes == 0) {
    return Status::InvalidArgument("max_bytes", "a lend needs max_bytes > 0");
  }
  const MutableByteSpan space = raw_->Lend(min_bytes, max_bytes);
  if (space.empty()) {
    return ObjectWriter::AppendSpace(min_bytes, max_bytes);  // scratch, back through Append
  }
  lent_ = space;
  return space;
}

Status CheckingWriter::Appended(uint64_t n) {
  if (!lent_.has_value()) {
    return ObjectWriter::Appended(n);  // the scratch lend: through Append
  }
  const MutableByteSpan lent = *lent_;
  lent_.reset();
  if (n > lent.size()) {
    return Status::FailedPrecondition(Subject::kEntity, "Appended more than was lent");
  }
  OC_RETURN_IF_ERROR(Usable());
  check_.Update(lent.first(n));
  failed_ = raw_->Lent(n);
  return failed_;
}

Status CheckingWriter::AddHeader(std::string name, std::string value) {
  if (spent_) {
    return Status::FailedPrecondition(Subject::kEntity, "writer already committed");
  }
  options_.headers.emplace_back(std::move(name), std::move(value));
  return Status::Ok();
}

Result<ObjectMeta> CheckingWriter::Commit() {
  if (spent_) {
    return Status::FailedPrecondition(Subject::kEntity, "writer already committed");
  }
  spent_ = true;
  Status s = failed_;
  if (s.ok()) {
    s = raw_->Finish();
  }
  // The checks' MD5 is computed whatever the outcome: the raw writer may need it (the ETag).
  const Status checked = check_.Finish();
  if (s.ok()) {
    s = checked;
  }
  if (!s.ok()) {
    raw_->Discard();
    return s;
  }
  return raw_->Commit(options_, check_);
}

}  // namespace oc::storage
