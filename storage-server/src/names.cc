#include "names.h"

#include <string>

#include "oc/storage/types.h"

namespace oc::storage {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool LooksLikeIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      ++j;
    }
    if (j == i || j - i > 3) {
      return false;
    }
    ++parts;
    if (j == s.size()) {
      break;
    }
    if (s[j] != '.') {
      return false;
    }
    i = j + 1;
  }
  return parts == 4;
}

Status BadBucket(std::string message) {
  return Status(Code::kInvalidArgument, Subject::kBucket, "bucket", std::move(message));
}

}  // namespace

Status ValidateBucketName(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) {
    return BadBucket("bucket name must be 3 to 63 characters");
  }
  for (char c : b) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') {
      return BadBucket("bucket name may hold only lowercase letters, digits, '.' and '-'");
    }
  }
  if (!IsLowerAlnum(b.front()) || !IsLowerAlnum(b.back())) {
    return BadBucket("bucket name must begin and end with a letter or digit");
  }
  if (b.find("..") != std::string_view::npos) {
    return BadBucket("bucket name must not hold two adjacent dots");
  }
  if (LooksLikeIpv4(b)) {
    return BadBucket("bucket name must not be an IP address");
  }
  if (b.starts_with("xn--") || b.starts_with("sthree-") || b.ends_with("-s3alias") ||
      b.ends_with("--ol-s3")) {
    return BadBucket("bucket name uses a reserved prefix or suffix");
  }
  return Status::Ok();
}

Status ValidateObjectKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return Status(Code::kInvalidArgument, Subject::kKey, "key",
                  "key must be 1 to " + std::to_string(kMaxKeyBytes) + " bytes");
  }
  if (key.find('\0') != std::string_view::npos) {
    return Status(Code::kInvalidArgument, Subject::kKey, "key", "key must not contain NUL");
  }
  return Status::Ok();
}

}  // namespace oc::storage
