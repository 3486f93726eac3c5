#include "stream_copy.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "records/object_checksum.h"

namespace oc::storage {

Result<ObjectMeta> StreamCopy(Store& from, const ObjectKey& src, Store& to, const ObjectKey& dst,
                              const std::optional<PutOptions>& replace,
                              const WriteConditions& conditions, uint64_t piece_bytes) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> reader, from.Get(src, ByteRange::All()));
  PutOptions options;
  const ObjectMeta& m = reader->meta();
  if (replace.has_value()) {
    options = *replace;
    options.headers = CopyHeaders(m, replace->headers);
  } else {
    options.content_type = m.content_type;
    options.user_meta = m.user_meta;
    options.headers = m.headers;
    options.chunk = m.chunk;
  }
  if (!options.tags.has_value()) {
    options.tags = m.tags;  // x-amz-tagging-directive: COPY
  }
  options.expected_size = reader->length();
  options.content_md5.reset();
  options.if_none_match = conditions.if_none_match;
  options.if_match = conditions.if_match;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer, to.Put(dst, options));
  std::vector<std::byte> buffer(std::min<uint64_t>(piece_bytes, reader->length()));
  for (;;) {
    OC_ASSIGN_OR_RETURN(uint64_t n, reader->Read(buffer));
    if (n == 0) {
      break;
    }
    OC_RETURN_IF_ERROR(writer->Append(ByteSpan(buffer.data(), n)));
  }
  return writer->Commit();
}

}  // namespace oc::storage
