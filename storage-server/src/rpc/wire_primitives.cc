// The body primitives of the storage RPC (wire.h): WireWriter appends little-endian integers
// and length-prefixed bytes; WireReader reads them back, checking every length against what
// remains of the frame and keeping the first error.
#include <fmt/core.h>

#include "rpc/wire.h"

namespace oc::storage::rpc {

// --- WireWriter ---

void WireWriter::U16(uint16_t v) {
  U8(static_cast<uint8_t>(v & 0xff));
  U8(static_cast<uint8_t>(v >> 8));
}

void WireWriter::U32(uint32_t v) {
  std::byte b[4];
  PutLittleEndian32(v, b);
  out_->insert(out_->end(), b, b + 4);
}

void WireWriter::U64(uint64_t v) {
  std::byte b[8];
  PutLittleEndian64(v, b);
  out_->insert(out_->end(), b, b + 8);
}

void WireWriter::Bytes(ByteSpan bytes) {
  U32(static_cast<uint32_t>(bytes.size()));
  Raw(bytes);
}

// --- WireReader ---

bool WireReader::Fail(std::string_view field, std::string_view what) {
  if (status_.ok()) {
    status_ = Status::InvalidArgument(std::string(field), std::string(what));
  }
  return false;
}

bool WireReader::Need(size_t n, std::string_view field) {
  if (!status_.ok()) {
    return false;
  }
  if (n > remaining()) {
    return Fail(field, fmt::format("truncated: needs {} bytes, {} left", n, remaining()));
  }
  return true;
}

bool WireReader::U8(uint8_t* v) {
  if (!Need(1, "u8")) {
    return false;
  }
  *v = static_cast<uint8_t>(data_[pos_]);
  pos_ += 1;
  return true;
}

bool WireReader::U16(uint16_t* v) {
  if (!Need(2, "u16")) {
    return false;
  }
  *v = static_cast<uint16_t>(static_cast<uint16_t>(data_[pos_]) |
                             (static_cast<uint16_t>(data_[pos_ + 1]) << 8));
  pos_ += 2;
  return true;
}

bool WireReader::U32(uint32_t* v) {
  if (!Need(4, "u32")) {
    return false;
  }
  *v = GetLittleEndian32(data_.data() + pos_);
  pos_ += 4;
  return true;
}

bool WireReader::U64(uint64_t* v) {
  if (!Need(8, "u64")) {
    return false;
  }
  *v = GetLittleEndian64(data_.data() + pos_);
  pos_ += 8;
  return true;
}

bool WireReader::I64(int64_t* v) {
  uint64_t u = 0;
  if (!U64(&u)) {
    return false;
  }
  *v = static_cast<int64_t>(u);
  return true;
}

bool WireReader::Bool(bool* v) {
  uint8_t b = 0;
  if (!U8(&b)) {
    return false;
  }
  if (b > 1) {
    return Fail("bool", "flag byte is not 0 or 1");
  }
  *v = b == 1;
  return true;
}

bool WireReader::Str(std::string* s) {
  uint32_t n = 0;
  ByteSpan bytes;
  if (!U32(&n) || !Take(n, &bytes)) {
    return false;
  }
  s->assign(AsText(bytes));
  return true;
}

bool WireReader::Count(uint32_t* count, size_t min_element_bytes) {
  if (!U32(count)) {
    return false;
  }
  if (static_cast<uint64_t>(*count) * min_element_bytes > remaining()) {
    return Fail("count", fmt::format("{} elements cannot fit in {} bytes", *count, remaining()));
  }
  return true;
}

bool WireReader::Take(size_t n, ByteSpan* out) {
  if (!Need(n, "bytes")) {
    return false;
  }
  *out = data_.subspan(pos_, n);
  pos_ += n;
  return true;
}

Status WireReader::Finish() {
  if (status_.ok() && remaining() != 0) {
    Fail("body", fmt::format("{} trailing bytes", remaining()));
  }
  return status_;
}

}  // namespace oc::storage::rpc
