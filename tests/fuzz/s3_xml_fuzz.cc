// Fuzzes the S3 XML request-body parser (CompleteMultipartUpload, Delete,
// CreateBucketConfiguration) and the escaping writer: no crash, leak or hang on any input,
// whatever is escaped makes a well-formed document, and XML-representable text parses back
// to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "oc/common/utf8.h"
#include "s3/s3_xml.h"

namespace {

// UTF-8 whose every character is in XML 1.0's Char production.
bool IsXmlText(std::string_view text) {
  while (!text.empty()) {
    std::optional<oc::Utf8Char> c = oc::DecodeUtf8(text);
    if (!c) {
      return false;
    }
    const uint32_t cp = c->code_point;
    if (!(cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
          (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000)) {
      return false;
    }
    text.remove_prefix(c->length);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)oc::gateway::ParseXml(in);
  (void)oc::gateway::ParseCompleteMultipartUpload(in);
  (void)oc::gateway::ParseDeleteObjects(in);
  (void)oc::gateway::ParseCreateBucketConfiguration(in);
  // Whatever the bytes, the escaped text makes a well-formed document; text that is UTF-8 of
  // XML 1.0 characters only parses back to itself (anything else becomes U+FFFD).
  std::string doc = "<Key>";
  oc::gateway::AppendXmlEscaped(in, &doc);
  doc += "</Key>";
  oc::Result<oc::gateway::XmlNode> node = oc::gateway::ParseXml(doc);
  OC_CHECK(node.has_value());
  if (IsXmlText(in)) {
    OC_CHECK(node->text == in);
  }
  return 0;
}
