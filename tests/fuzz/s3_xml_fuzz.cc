// Fuzzes the S3 XML request-body parser (CompleteMultipartUpload, Delete,
// CreateBucketConfiguration) and the escaping writer: no crash, leak or hang on any input,
// and whatever is escaped parses back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "s3/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)oc::gateway::ParseXml(in);
  (void)oc::gateway::ParseCompleteMultipartUpload(in);
  (void)oc::gateway::ParseDeleteObjects(in);
  (void)oc::gateway::ParseCreateBucketConfiguration(in);
  // Round trip: text without NUL escapes and parses back (control characters become
  // references, which the parser decodes, except NUL, which XML 1.0 cannot carry).
  if (in.find('\0') == std::string_view::npos) {
    std::string doc = "<Key>";
    oc::gateway::AppendXmlEscaped(in, &doc);
    doc += "</Key>";
    oc::Result<oc::gateway::XmlNode> node = oc::gateway::ParseXml(doc);
    OC_CHECK(node.has_value());
    OC_CHECK(node->text == in);
  }
  return 0;
}
