// Fuzzes S3 object tagging (gateway/src/s3/s3_tagging.h): byte 0 chooses the parser, the rest
// is its input.
//   even: a PutObjectTagging body (ParseTaggingXml)
//   odd:  an x-amz-tagging header (ParseTaggingHeader, URL query form)
// Whatever parses is within S3's limits (CheckTags), and survives a round trip unchanged: the
// GetObjectTagging answer (TaggingXml) parses back to the same tags, and so does the header
// form rebuilt with every byte percent-encoded. A refusal names its field (the XML, Tagging or
// x-amz-tagging) and is an invalid argument.
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "oc/sigv4/uri.h"
#include "s3/s3_tagging.h"

namespace {

using oc::gateway::TagSet;

void CheckRoundTrips(const TagSet& tags) {
  OC_CHECK(oc::gateway::CheckTags(tags, "Tagging").ok());
  const oc::Result<TagSet> from_xml = oc::gateway::ParseTaggingXml(oc::gateway::TaggingXml(tags));
  OC_CHECK(from_xml.has_value() && *from_xml == tags);
  std::string header;
  for (const auto& [key, value] : tags) {
    if (!header.empty()) {
      header.push_back('&');
    }
    header += oc::sigv4::UriEncode(key, /*encode_slash=*/true);
    header.push_back('=');
    header += oc::sigv4::UriEncode(value, /*encode_slash=*/true);
  }
  const oc::Result<TagSet> from_header = oc::gateway::ParseTaggingHeader(header);
  OC_CHECK(from_header.has_value() && *from_header == tags);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const bool header = (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const oc::Result<TagSet> tags =
      header ? oc::gateway::ParseTaggingHeader(input) : oc::gateway::ParseTaggingXml(input);
  if (!tags.has_value()) {
    const oc::Status& st = tags.error();
    OC_CHECK(st.code() == oc::Code::kInvalidArgument);
    if (header) {
      OC_CHECK(st.field() == "x-amz-tagging");
    } else {
      OC_CHECK(st.field() == oc::gateway::kTaggingXmlField || st.field() == "Tagging");
    }
    return 0;
  }
  OC_CHECK(tags->size() <= oc::gateway::kMaxObjectTags);
  CheckRoundTrips(*tags);
  return 0;
}
