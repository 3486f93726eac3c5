#include "s3/s3_xml.h"

#include <charconv>

#include <fmt/core.h>

#include "oc/common/text.h"
#include "oc/common/utf8.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kS3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/";

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
}
bool IsSpace(char c) { return kXmlWhitespace.find(c) != std::string_view::npos; }

class Parser {
 public:
  explicit Parser(std::string_view in) : in_(in) {}

  Result<XmlNode> Document() {
    SkipMisc(/*allow_declaration=*/true);
    if (!ok_) {
      return Error();
    }
    if (!Peek('<')) {
      return Fail("expected the root element");
    }
    XmlNode root;
    if (!Element(&root, 1)) {
      return Error();
    }
    SkipMisc(/*allow_declaration=*/false);
    if (!ok_) {
      return Error();
    }
    if (pos_ != in_.size()) {
      return Fail("content after the root element");
    }
    return root;
  }

 private:
  bool Peek(char c) const { return pos_ < in_.size() && in_[pos_] == c; }
  bool StartsWith(std::string_view s) const { return in_.substr(pos_).starts_with(s); }

  Status Fail(std::string_view what) {
    if (ok_) {
      ok_ = false;
      error_ = fmt::format("{} at byte {}", what, pos_);
    }
    return Error();
  }
  Status Error() const { return Status::InvalidArgument("xml", error_); }

  // Skips whitespace, comments and (at the start only) one <?xml ...?> declaration.
  void SkipMisc(bool allow_declaration) {
    while (ok_) {
      while (pos_ < in_.size() && IsSpace(in_[pos_])) {
        ++pos_;
      }
      if (StartsWith("<?xml") && allow_declaration) {
        const size_t end = in_.find("?>", pos_);
        if (end == std::string_view::npos) {
          (void)Fail("unterminated declaration");
          return;
        }
        pos_ = end + 2;
        allow_declaration = false;
      } else if (StartsWith("<!--")) {
        if (!SkipComment()) {
          return;
        }
      } else if (StartsWith("<!") || StartsWith("<?")) {
        (void)Fail("DOCTYPE and processing instructions are not accepted");
        return;
      } else {
        return;
      }
    }
  }

  bool SkipComment() {
    const size_t end = in_.find("-->", pos_ + 4);
    if (end == std::string_view::npos) {
      (void)Fail("unterminated comment");
      return false;
    }
    pos_ = end + 3;
    return true;
  }

  bool Name(std::string* out) {
    const size_t start = pos_;
    while (pos_ < in_.size() && IsNameChar(in_[pos_])) {
      ++pos_;
    }
    if (pos_ == start) {
      (void)Fail("expected a name");
      return false;
    }
    std::string_view name = in_.substr(start, pos_ - start);
    const size_t colon = name.rfind(':');
    if (colon != std::string_view::npos) {
      name = name.substr(colon + 1);
    }
    out->assign(name);
    return true;
  }

  // Decodes one entity or character reference starting at '&'.
  bool Reference(std::string* out) {
    const size_t semi = in_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) {
      (void)Fail("malformed reference");
      return false;
    }
    const std::string_view ref = in_.substr(pos_ + 1, semi - pos_ - 1);
    if (ref == "lt") {
      out->push_back('<');
    } else if (ref == "gt") {
      out->push_back('>');
    } else if (ref == "amp") {
      out->push_back('&');
    } else if (ref == "quot") {
      out->push_back('"');
    } else if (ref == "apos") {
      out->push_back('\'');
    } else if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      auto [p, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || cp == 0 ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        (void)Fail("bad character reference");
        return false;
      }
      AppendUtf8(cp, out);
    } else {
      (void)Fail("unknown entity");
      return false;
    }
    pos_ = semi + 1;
    return true;
  }

  bool Attributes() {
    for (;;) {
      const size_t before = pos_;
      while (pos_ < in_.size() && IsSpace(in_[pos_])) {
        ++pos_;
      }
      if (pos_ >= in_.size()) {
        (void)Fail("unterminated tag");
        return false;
      }
      if (in_[pos_] == '>' || in_[pos_] == '/') {
        return true;
      }
      if (pos_ == before) {
        (void)Fail("expected whitespace before an attribute");
        return false;
      }
      std::string ignored;
      if (!Name(&ignored)) {
        return false;
      }
      while (pos_ < in_.size() && IsSpace(in_[pos_])) {
        ++pos_;
      }
      if (!Peek('=')) {
        (void)Fail("expected '='");
        return false;
      }
      ++pos_;
      while (pos_ < in_.size() && IsSpace(in_[pos_])) {
        ++pos_;
      }
      if (pos_ >= in_.size() || (in_[pos_] != '"' && in_[pos_] != '\'')) {
        (void)Fail("expected a quoted attribute value");
        return false;
      }
      const char quote = in_[pos_++];
      const size_t end = in_.find(quote, pos_);
      if (end == std::string_view::npos ||
          in_.substr(pos_, end - pos_).find('<') != std::string_view::npos) {
        (void)Fail("bad attribute value");
        return false;
      }
      pos_ = end + 1;
    }
  }

  bool Element(XmlNode* node, uint32_t depth) {
    if (depth > kMaxXmlDepth) {
      (void)Fail("nesting too deep");
      return false;
    }
    if (++nodes_ > kMaxXmlNodes) {
      (void)Fail("too many elements");
      return false;
    }
    ++pos_;  // '<'
    if (!Name(&node->name) || !Attributes()) {
      return false;
    }
    if (Peek('/')) {
      ++pos_;
      if (!Peek('>')) {
        return (void)Fail("expected '>'"), false;
      }
      ++pos_;
      return true;
    }
    ++pos_;  // '>'
    for (;;) {
      if (pos_ >= in_.size()) {
        (void)Fail("unterminated element");
        return false;
      }
      const char c = in_[pos_];
      if (c == '<') {
        if (StartsWith("</")) {
          pos_ += 2;
          std::string closing;
          if (!Name(&closing)) {
            return false;
          }
          while (pos_ < in_.size() && IsSpace(in_[pos_])) {
            ++pos_;
          }
          if (closing != node->name || !Peek('>')) {
            (void)Fail("mismatched closing tag");
            return false;
          }
          ++pos_;
          return true;
        }
        if (StartsWith("<!--")) {
          if (!SkipComment()) {
            return false;
          }
          continue;
        }
        if (StartsWith("<![CDATA[")) {
          const size_t end = in_.find("]]>", pos_ + 9);
          if (end == std::string_view::npos) {
            (void)Fail("unterminated CDATA");
            return false;
          }
          node->text.append(in_.substr(pos_ + 9, end - pos_ - 9));
          pos_ = end + 3;
          continue;
        }
        if (StartsWith("<!") || StartsWith("<?")) {
          (void)Fail("markup declarations are not accepted");
          return false;
        }
        node->children.emplace_back();
        if (!Element(&node->children.back(), depth + 1)) {
          return false;
        }
      } else if (c == '&') {
        if (!Reference(&node->text)) {
          return false;
        }
      } else {
        node->text.push_back(c);
        ++pos_;
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
  uint32_t nodes_ = 0;
  bool ok_ = true;
  std::string error_;
};

Status Malformed(std::string message) { return Status::InvalidArgument("xml", std::move(message)); }

}  // namespace

XmlWriter::XmlWriter() {
  out_.reserve(512);
  out_.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

void XmlWriter::OpenRoot(std::string_view name) {
  out_.push_back('<');
  out_.append(name);
  out_.append(" xmlns=\"");
  out_.append(kS3Namespace);
  out_.append("\">");
}

void XmlWriter::Open(std::string_view name) {
  out_.push_back('<');
  out_.append(name);
  out_.push_back('>');
}

void XmlWriter::Close(std::string_view name) {
  out_.append("</");
  out_.append(name);
  out_.push_back('>');
}

void XmlWriter::Element(std::string_view name, std::string_view text) {
  Open(name);
  AppendXmlEscaped(text, &out_);
  Close(name);
}

void XmlWriter::Element(std::string_view name, uint64_t value) {
  Open(name);
  out_.append(std::to_string(value));
  Close(name);
}

void AppendXmlEscaped(std::string_view text, std::string* out) {
  // U+FFFD REPLACEMENT CHARACTER, for what XML 1.0 cannot carry (as Go's encoding/xml and
  // so MinIO write it): a byte that is not part of well-formed UTF-8, and a character outside
  // XML 1.0's Char production (C0 controls other than tab, LF, CR; U+FFFE, U+FFFF), which
  // not even a character reference may name. Listings with encoding-type=url carry such
  // keys exactly (docs/decisions/gateway-hostile-http-input.md).
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    switch (c) {
      case '&':
        out->append("&amp;");
        ++i;
        continue;
      case '<':
        out->append("&lt;");
        ++i;
        continue;
      case '>':
        out->append("&gt;");
        ++i;
        continue;
      case '"':
        out->append("&quot;");
        ++i;
        continue;
      case '\'':
        out->append("&apos;");
        ++i;
        continue;
      // Written as references so a parser's line-end and whitespace normalisation keeps them.
      case '\t':
        out->append("&#x9;");
        ++i;
        continue;
      case '\n':
        out->append("&#xA;");
        ++i;
        continue;
      case '\r':
        out->append("&#xD;");
        ++i;
        continue;
      default:
        break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x80) {
      out->push_back(c);
      ++i;
      continue;
    }
    if (byte < 0x20) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    std::optional<Utf8Char> ch = DecodeUtf8(text.substr(i));
    if (!ch) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    if (ch->code_point == 0xFFFE || ch->code_point == 0xFFFF) {
      out->append(kReplacement);
    } else {
      out->append(text.substr(i, ch->length));
    }
    i += ch->length;
  }
}

const XmlNode* XmlNode::Child(std::string_view child_name) const {
  for (const XmlNode& child : children) {
    if (child.name == child_name) {
      return &child;
    }
  }
  return nullptr;
}

Result<XmlNode> ParseXml(std::string_view document) {
  // XML 1.0 section 4.3.3: a document without an encoding declaration is UTF-8, and S3
  // accepts nothing else; a stray byte here would otherwise reach a key.
  if (!IsValidUtf8(document)) {
    return Status::InvalidArgument("xml", "the document is not well-formed UTF-8");
  }
  return Parser(document).Document();
}

Result<std::vector<XmlPart>> ParseCompleteMultipartUpload(std::string_view body) {
  OC_ASSIGN_OR_RETURN(XmlNode root, ParseXml(body));
  if (root.name != "CompleteMultipartUpload") {
    return Malformed("root is not CompleteMultipartUpload");
  }
  std::vector<XmlPart> parts;
  for (const XmlNode& child : root.children) {
    if (child.name != "Part") {
      continue;  // checksums and unknown elements are ignored, as S3 does
    }
    const XmlNode* number = child.Child("PartNumber");
    const XmlNode* etag = child.Child("ETag");
    if (number == nullptr || etag == nullptr) {
      return Malformed("Part without PartNumber or ETag");
    }
    const std::string_view digits = Trim(number->text, kXmlWhitespace);
    uint32_t n = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) {
      return Malformed("PartNumber is not a number");
    }
    std::string_view tag = Trim(etag->text, kXmlWhitespace);
    if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
      tag = tag.substr(1, tag.size() - 2);
    }
    XmlPart part{n, std::string(tag), "", ""};
    for (const XmlNode& field : child.children) {
      constexpr std::string_view kChecksum = "Checksum";
      if (!field.name.starts_with(kChecksum) || field.name == "ChecksumType") {
        continue;
      }
      if (!part.checksum_algorithm.empty()) {
        return Malformed("Part with more than one checksum");
      }
      part.checksum_algorithm = field.name.substr(kChecksum.size());
      part.checksum = std::string(Trim(field.text, kXmlWhitespace));
    }
    parts.push_back(std::move(part));
  }
  if (parts.empty()) {
    return Malformed("no parts");
  }
  return parts;
}

Result<XmlDeleteRequest> ParseDeleteObjects(std::string_view body) {
  OC_ASSIGN_OR_RETURN(XmlNode root, ParseXml(body));
  if (root.name != "Delete") {
    return Malformed("root is not Delete");
  }
  XmlDeleteRequest request;
  for (const XmlNode& child : root.children) {
    if (child.name == "Quiet") {
      const std::string_view v = Trim(child.text, kXmlWhitespace);
      if (v == "true") {
        request.quiet = true;
      } else if (v != "false") {
        return Malformed("Quiet is not a boolean");
      }
    } else if (child.name == "Object") {
      const XmlNode* key = child.Child("Key");
      if (key == nullptr) {
        return Malformed("Object without Key");
      }
      if (request.keys.size() == kMaxDeleteKeys) {
        return Malformed("more than 1000 objects");
      }
      request.keys.push_back(key->text);
    }
  }
  if (request.keys.empty()) {
    return Malformed("no objects");
  }
  return request;
}

Result<std::string> ParseCreateBucketConfiguration(std::string_view body) {
  OC_ASSIGN_OR_RETURN(XmlNode root, ParseXml(body));
  if (root.name != "CreateBucketConfiguration") {
    return Malformed("root is not CreateBucketConfiguration");
  }
  const XmlNode* location = root.Child("LocationConstraint");
  return location == nullptr ? std::string() : std::string(Trim(location->text, kXmlWhitespace));
}

}  // namespace oc::gateway
