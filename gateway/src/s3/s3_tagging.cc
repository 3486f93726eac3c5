#include "s3/s3_tagging.h"

#include <set>
#include <utility>

#include <fmt/core.h>

#include "oc/common/text.h"
#include "oc/common/utf8.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

// Characters of `text`, or nullopt when it is not well-formed UTF-8.
std::optional<size_t> CountChars(std::string_view text) {
  size_t n = 0;
  while (!text.empty()) {
    const std::optional<Utf8Char> c = DecodeUtf8(text);
    if (!c.has_value()) {
      return std::nullopt;
    }
    text.remove_prefix(c->length);
    ++n;
  }
  return n;
}

bool HasControlCharacter(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return true;
    }
  }
  return false;
}

Status Invalid(std::string_view field, std::string message) {
  return Status::InvalidArgument(std::string(field), std::move(message));
}

// Query-string decoding of one key or value: '+' is a space, then %XX escapes.
std::optional<std::string> FormDecode(std::string_view in) {
  std::string plus_as_space(in);
  for (char& c : plus_as_space) {
    if (c == '+') {
      c = ' ';
    }
  }
  return PercentDecode(plus_as_space);
}

}  // namespace

Status CheckTags(const TagSet& tags, std::string_view field) {
  if (tags.size() > kMaxObjectTags) {
    return Invalid(
        field, fmt::format("{} tags; an object may have at most {}", tags.size(), kMaxObjectTags));
  }
  std::set<std::string_view> keys;
  for (const auto& [key, value] : tags) {
    const std::optional<size_t> key_chars = CountChars(key);
    const std::optional<size_t> value_chars = CountChars(value);
    if (!key_chars.has_value() || !value_chars.has_value()) {
      return Invalid(field, "a tag key or value is not well-formed UTF-8");
    }
    // S3 takes letters, digits, spaces and + - = . _ : / @ only; control characters could not
    // even be written back in GetObjectTagging's XML (XML 1.0 has no way to carry most of them).
    if (HasControlCharacter(key) || HasControlCharacter(value)) {
      return Invalid(field, "a tag key or value holds a control character");
    }
    if (*key_chars == 0 || *key_chars > kMaxTagKeyChars) {
      return Invalid(field, fmt::format("a tag key must have 1 to {} characters, not {}",
                                        kMaxTagKeyChars, *key_chars));
    }
    if (*value_chars > kMaxTagValueChars) {
      return Invalid(field, fmt::format("a tag value may have at most {} characters, not {}",
                                        kMaxTagValueChars, *value_chars));
    }
    if (!keys.insert(key).second) {
      return Invalid(field, "tag keys must be unique");
    }
  }
  return Status::Ok();
}

Result<TagSet> ParseTaggingHeader(std::string_view header) {
  constexpr std::string_view kField = "x-amz-tagging";
  TagSet tags;
  header = Trim(header);
  while (!header.empty()) {
    const size_t amp = header.find('&');
    const std::string_view pair = header.substr(0, amp);
    header = amp == std::string_view::npos ? std::string_view() : header.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    if (tags.size() == kMaxObjectTags) {  // bounded before decoding more
      return Invalid(kField, fmt::format("an object may have at most {} tags", kMaxObjectTags));
    }
    const size_t eq = pair.find('=');
    std::optional<std::string> key = FormDecode(pair.substr(0, eq));
    std::optional<std::string> value =
        FormDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!key.has_value() || !value.has_value()) {
      return Invalid(kField, "malformed %-escape");
    }
    tags.emplace_back(std::move(*key), std::move(*value));
  }
  OC_RETURN_IF_ERROR(CheckTags(tags, kField));
  return tags;
}

Result<TagSet> ParseTaggingXml(std::string_view body) {
  Result<XmlNode> root = ParseXml(body);
  if (!root.has_value()) {
    return Invalid(kTaggingXmlField, std::string(root.error().message()));
  }
  if (root->name != "Tagging") {
    return Invalid(kTaggingXmlField, "root is not Tagging");
  }
  const XmlNode* set = root->Child("TagSet");
  if (set == nullptr) {
    return Invalid(kTaggingXmlField, "Tagging without TagSet");
  }
  TagSet tags;
  for (const XmlNode& tag : set->children) {
    if (tag.name != "Tag") {
      return Invalid(kTaggingXmlField, "TagSet holds something other than Tag");
    }
    const XmlNode* key = tag.Child("Key");
    const XmlNode* value = tag.Child("Value");
    if (key == nullptr || value == nullptr) {
      return Invalid(kTaggingXmlField, "Tag without Key or Value");
    }
    if (tags.size() == kMaxObjectTags) {
      return Invalid("Tagging", fmt::format("an object may have at most {} tags", kMaxObjectTags));
    }
    tags.emplace_back(key->text, value->text);
  }
  OC_RETURN_IF_ERROR(CheckTags(tags, "Tagging"));
  return tags;
}

std::string TaggingXml(const TagSet& tags) {
  XmlWriter xml;
  xml.OpenRoot("Tagging");
  xml.Open("TagSet");
  for (const auto& [key, value] : tags) {
    xml.Open("Tag");
    xml.Element("Key", key);
    xml.Element("Value", value);
    xml.Close("Tag");
  }
  xml.Close("TagSet");
  xml.Close("Tagging");
  return std::move(xml).Finish();
}

}  // namespace oc::gateway
