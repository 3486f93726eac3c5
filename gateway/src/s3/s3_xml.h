#pragma once
// The XML the S3 API needs: a small escaping writer for response bodies, and a small strict
// parser for the few request bodies (CompleteMultipartUpload, Delete, CreateBucketConfiguration).
//
// The parser accepts elements, attributes (ignored), character data, the five predefined
// entities and numeric character references, comments, an XML declaration and CDATA. It
// refuses DOCTYPE (no entity expansion), processing instructions other than the declaration,
// mismatched tags, text outside the root, and input beyond named limits (kMaxXmlDepth,
// kMaxXmlNodes). Element names are compared without their namespace prefix. The caller bounds
// the body size before reading it (Options::max_xml_body_bytes).
// Thread safety: pure functions; an XmlWriter is used by one thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"

namespace oc::gateway {

// Nesting deeper than this is refused: the S3 bodies we parse are three levels deep.
inline constexpr uint32_t kMaxXmlDepth = 16;
// DeleteObjects carries at most 1000 <Object> (3 nodes each), CompleteMultipartUpload at most
// 10000 <Part> (3 nodes each); anything larger is refused before building more nodes.
inline constexpr uint32_t kMaxXmlNodes = 40000;

// Appends `text` to `out` as XML 1.0 character data that is well-formed whatever the bytes:
// &, <, >, " and ' as entities; tab, LF and CR as character references; every byte that is
// not part of well-formed UTF-8 and every character XML 1.0 cannot carry (other C0 controls,
// U+FFFE, U+FFFF) as U+FFFD. Everything else is copied.
void AppendXmlEscaped(std::string_view text, std::string* out);

class XmlWriter {
 public:
  XmlWriter();  // starts with the XML declaration
  // <name xmlns="http://s3.amazonaws.com/doc/2006-03-01/"> for the root of a response.
  void OpenRoot(std::string_view name);
  void Open(std::string_view name);
  void Close(std::string_view name);
  // <name>escaped text</name>
  void Element(std::string_view name, std::string_view text);
  void Element(std::string_view name, uint64_t value);
  // <name>true</name> or false (a separate name: a string literal would convert to bool).
  void Flag(std::string_view name, bool value) {
    Element(name, std::string_view(value ? "true" : "false"));
  }
  // Escaped character data at the current position.
  void Text(std::string_view text) { AppendXmlEscaped(text, &out_); }
  // Markup written as is (an opening tag with attributes); the caller writes it well-formed.
  void Raw(std::string_view markup) { out_.append(markup); }
  std::string Finish() && { return std::move(out_); }

 private:
  std::string out_;
};

struct XmlNode {
  std::string name;  // local name, prefix stripped
  std::string text;  // concatenated character data directly inside this element
  std::vector<XmlNode> children;

  // The first child called `name`, or nullptr.
  const XmlNode* Child(std::string_view name) const;
};

// Parses a whole document; returns its root element. kInvalidArgument (field "xml") with the
// byte offset on any violation, or when the document is not well-formed UTF-8.
Result<XmlNode> ParseXml(std::string_view document);

// --- The request bodies ---

struct XmlPart {
  uint32_t part_number = 0;
  std::string etag;  // quotes removed
  // The part's checksum element, if any: "CRC32" and its value for <ChecksumCRC32>.
  std::string checksum_algorithm;
  std::string checksum;
};
// <CompleteMultipartUpload><Part><PartNumber/><ETag/>[<ChecksumCRC32/>...]</Part>...
// </CompleteMultipartUpload>. kInvalidArgument (MalformedXML) if the root or a part is
// malformed (two checksum elements in one part included), or there are no parts.
Result<std::vector<XmlPart>> ParseCompleteMultipartUpload(std::string_view body);

struct XmlDeleteRequest {
  bool quiet = false;
  std::vector<std::string> keys;
};
// Max keys in one DeleteObjects request (S3's limit).
inline constexpr size_t kMaxDeleteKeys = 1000;
// <Delete><Quiet/><Object><Key/><VersionId/></Object>...</Delete>; 1..1000 objects.
Result<XmlDeleteRequest> ParseDeleteObjects(std::string_view body);

// <CreateBucketConfiguration><LocationConstraint/></...>; returns the constraint ("" if none).
Result<std::string> ParseCreateBucketConfiguration(std::string_view body);

}  // namespace oc::gateway
