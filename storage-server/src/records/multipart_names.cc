#include "records/multipart_names.h"

#include <chrono>
#include <cstddef>
#include <random>
#include <utility>

#include "oc/common/bytes.h"

namespace oc::storage {

bool IsUploadId(std::string_view id) {
  if (id.size() != kUploadIdChars) {
    return false;
  }
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

std::string NewUploadId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::byte raw[16];
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  PutBigEndian64(static_cast<uint64_t>(std::chrono::nanoseconds(now).count()), raw);
  PutBigEndian64(rng(), raw + 8);
  return HexEncode(ByteSpan(raw, sizeof(raw)));
}

Status NoSuchUpload(std::string_view upload_id) {
  return Status::NotFound(Subject::kUpload, std::string(upload_id));
}

std::string NormalizeEtag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  std::string out(etag);
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

Status PartError(Code code, std::string message) {
  return Status(code, Subject::kPart, "Part", std::move(message));
}

}  // namespace oc::storage
