#include "s3/s3_lifecycle.h"

#include <set>
#include <utility>

#include <fmt/core.h>

#include "oc/common/text.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

constexpr int64_t kMsPerDay = 86400000;

Status Invalid(std::string_view field, std::string message) {
  return Status::InvalidArgument(std::string(field), std::move(message));
}
Status Malformed(std::string message) { return Invalid(kLifecycleXmlField, std::move(message)); }

// Decimal digits only (surrounding whitespace allowed), no overflow past `max`.
std::optional<uint64_t> ParseUnsigned(std::string_view text, uint64_t max) {
  text = Trim(text, " \t\r\n");
  if (text.empty() || text.size() > 20) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) {
      return std::nullopt;
    }
    v = v * 10 + d;
  }
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int> Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) {
    return std::nullopt;
  }
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return std::nullopt;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

Result<uint32_t> ParseDays(const XmlNode& node, std::string_view field) {
  const std::optional<uint64_t> v = ParseUnsigned(node.text, kMaxLifecycleDays);
  if (!v.has_value()) {
    return Malformed(fmt::format("{} is not a whole number", field));
  }
  if (*v == 0) {
    return Invalid(field, fmt::format("'{}' must be a positive integer", field));
  }
  return static_cast<uint32_t>(*v);
}

Result<std::pair<std::string, std::string>> ParseTag(const XmlNode& tag) {
  const XmlNode* key = tag.Child("Key");
  const XmlNode* value = tag.Child("Value");
  if (key == nullptr || value == nullptr || tag.children.size() != 2) {
    return Malformed("Tag must hold one Key and one Value");
  }
  return std::make_pair(key->text, value->text);
}

Result<uint64_t> ParseSize(const XmlNode& node) {
  const std::optional<uint64_t> v = ParseUnsigned(node.text, UINT64_MAX);
  if (!v.has_value()) {
    return Malformed(fmt::format("{} is not a whole number", node.name));
  }
  return *v;
}

// One predicate of a Filter or of its And into `rule`; `in_and` allows repeated Tags.
Status ParsePredicate(const XmlNode& node, bool in_and, LifecycleRule* rule) {
  if (node.name == "Prefix") {
    if (in_and && rule->form == LifecycleFilterForm::kPrefix) {
      return Malformed("And holds two Prefix");
    }
    rule->prefix = node.text;
    if (in_and) {
      rule->form = LifecycleFilterForm::kPrefix;  // marks "seen" until And is done
    }
  } else if (node.name == "Tag") {
    OC_ASSIGN_OR_RETURN(auto tag, ParseTag(node));
    rule->tags.push_back(std::move(tag));
  } else if (node.name == "ObjectSizeGreaterThan") {
    if (rule->size_greater_than.has_value()) {
      return Malformed("two ObjectSizeGreaterThan");
    }
    OC_ASSIGN_OR_RETURN(rule->size_greater_than, ParseSize(node));
  } else if (node.name == "ObjectSizeLessThan") {
    if (rule->size_less_than.has_value()) {
      return Malformed("two ObjectSizeLessThan");
    }
    OC_ASSIGN_OR_RETURN(uint64_t less, ParseSize(node));
    if (less == 0) {
      return Invalid("ObjectSizeLessThan", "ObjectSizeLessThan must be a positive integer");
    }
    rule->size_less_than = less;
  } else {
    return Malformed(fmt::format("Filter holds an unknown element {}", node.name));
  }
  return Status::Ok();
}

Status ParseFilter(const XmlNode& filter, LifecycleRule* rule) {
  if (filter.children.empty()) {
    rule->form = LifecycleFilterForm::kEmpty;
    return Status::Ok();
  }
  if (filter.children.size() != 1) {
    return Malformed("Filter must hold exactly one of Prefix, Tag, ObjectSize*, And");
  }
  const XmlNode& only = filter.children.front();
  if (only.name != "And") {
    OC_RETURN_IF_ERROR(ParsePredicate(only, /*in_and=*/false, rule));
    rule->form = only.name == "Prefix"                  ? LifecycleFilterForm::kPrefix
                 : only.name == "Tag"                   ? LifecycleFilterForm::kTag
                 : only.name == "ObjectSizeGreaterThan" ? LifecycleFilterForm::kSizeGreater
                                                        : LifecycleFilterForm::kSizeLess;
    return Status::Ok();
  }
  rule->form = LifecycleFilterForm::kEmpty;
  for (const XmlNode& node : only.children) {
    OC_RETURN_IF_ERROR(ParsePredicate(node, /*in_and=*/true, rule));
  }
  const size_t predicates = (rule->form == LifecycleFilterForm::kPrefix ? 1 : 0) +
                            rule->tags.size() + (rule->size_greater_than ? 1 : 0) +
                            (rule->size_less_than ? 1 : 0);
  if (predicates < 2) {
    return Malformed("And must combine at least two predicates");
  }
  rule->form = LifecycleFilterForm::kAnd;
  return Status::Ok();
}

// True when XmlWriter writes `text` back as it is: no C0 control but tab, LF and CR, and
// neither U+FFFE nor U+FFFF (ParseXml has already refused ill-formed UTF-8).
bool WritableAsIs(std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 && b != '\t' && b != '\n' && b != '\r') {
      return false;
    }
  }
  return text.find("\xef\xbf\xbe") == std::string_view::npos &&
         text.find("\xef\xbf\xbf") == std::string_view::npos;
}

Status CheckRule(const LifecycleRule& rule) {
  if (!WritableAsIs(rule.id)) {
    return Invalid("ID", "ID holds a character XML cannot carry");
  }
  if (!WritableAsIs(rule.prefix)) {
    return Invalid("Prefix", "Prefix holds a character XML cannot carry");
  }
  if (rule.id.size() > kMaxLifecycleRuleIdChars) {
    return Invalid("ID", fmt::format("ID length should not exceed allowed limit of {}",
                                     kMaxLifecycleRuleIdChars));
  }
  if (!rule.expiration_days && !rule.expiration_date_ms && !rule.abort_days) {
    return Invalid(kLifecycleRuleField, "At least one action needs to be specified in a rule");
  }
  if (rule.abort_days && !rule.tags.empty()) {
    return Invalid(kLifecycleRuleField,
                   "AbortIncompleteMultipartUpload cannot be specified with Tags");
  }
  if (rule.size_greater_than && rule.size_less_than &&
      *rule.size_less_than <= *rule.size_greater_than) {
    return Invalid("ObjectSizeLessThan",
                   "ObjectSizeLessThan must be greater than ObjectSizeGreaterThan");
  }
  std::set<std::string_view> keys;
  for (const auto& [key, value] : rule.tags) {
    if (!keys.insert(key).second) {
      return Invalid("Tag", "Duplicate Tag Keys are not allowed");
    }
  }
  if (!rule.tags.empty()) {
    // A filter's tags follow the object-tag limits, but not the 10-tag count.
    for (const auto& tag : rule.tags) {
      OC_RETURN_IF_ERROR(CheckTags({tag}, "Tag"));
    }
  }
  return Status::Ok();
}

Status ParseExpiration(const XmlNode& node, LifecycleRule* rule) {
  for (const XmlNode& child : node.children) {
    if (child.name == "Days" && !rule->expiration_days && !rule->expiration_date_ms) {
      OC_ASSIGN_OR_RETURN(rule->expiration_days, ParseDays(child, "Days"));
    } else if (child.name == "Date" && !rule->expiration_days && !rule->expiration_date_ms) {
      const std::optional<int64_t> ms = ParseIso8601Utc(Trim(child.text, " \t\r\n"));
      if (!ms.has_value()) {
        return Invalid("Date", "Date is not an ISO 8601 date and time");
      }
      if (*ms < 0) {
        return Invalid("Date", "Date is before 1970");
      }
      if (*ms % kMsPerDay != 0) {
        return Invalid("Date", "'Date' must be at midnight GMT");
      }
      rule->expiration_date_ms = *ms;
    } else if (child.name == "ExpiredObjectDeleteMarker") {
      return Invalid("ExpiredObjectDeleteMarker",
                     "ExpiredObjectDeleteMarker is not supported: versioning is never enabled");
    } else {
      return Malformed("Expiration must hold one of Days or Date");
    }
  }
  if (!rule->expiration_days && !rule->expiration_date_ms) {
    return Malformed("Expiration must hold one of Days or Date");
  }
  return Status::Ok();
}

Result<LifecycleRule> ParseRule(const XmlNode& node) {
  LifecycleRule rule;
  bool has_status = false;
  bool has_rule_prefix = false;
  bool has_filter = false;
  bool has_id = false;
  for (const XmlNode& child : node.children) {
    const std::string_view name = child.name;
    if (name == "ID" && !has_id) {
      has_id = true;
      rule.id = child.text;
    } else if (name == "Status" && !has_status) {
      has_status = true;
      if (child.text != "Enabled" && child.text != "Disabled") {
        return Malformed("Status must be Enabled or Disabled");
      }
      rule.enabled = child.text == "Enabled";
    } else if (name == "Prefix" && !has_rule_prefix) {
      has_rule_prefix = true;
      rule.prefix = child.text;
    } else if (name == "Filter" && !has_filter) {
      has_filter = true;
      OC_RETURN_IF_ERROR(ParseFilter(child, &rule));
    } else if (name == "Expiration" && !rule.expiration_days && !rule.expiration_date_ms) {
      OC_RETURN_IF_ERROR(ParseExpiration(child, &rule));
    } else if (name == "AbortIncompleteMultipartUpload" && !rule.abort_days) {
      const XmlNode* days = child.Child("DaysAfterInitiation");
      if (days == nullptr || child.children.size() != 1) {
        return Malformed("AbortIncompleteMultipartUpload must hold DaysAfterInitiation");
      }
      OC_ASSIGN_OR_RETURN(rule.abort_days, ParseDays(*days, "DaysAfterInitiation"));
    } else if (name == "NoncurrentVersionExpiration" || name == "NoncurrentVersionTransition" ||
               name == "Transition") {
      return Invalid(name, fmt::format("{} is not supported: versioning is never enabled and "
                                       "there is one storage class",
                                       name));
    } else {
      return Malformed(fmt::format("Rule holds an unknown or repeated element {}", name));
    }
  }
  if (!has_status) {
    return Malformed("Rule without Status");
  }
  if (has_rule_prefix == has_filter) {
    return Malformed("Rule must hold exactly one of Prefix or Filter");
  }
  if (has_rule_prefix) {
    rule.form = LifecycleFilterForm::kRulePrefix;
  }
  OC_RETURN_IF_ERROR(CheckRule(rule));
  return rule;
}

void RenderFilter(const LifecycleRule& rule, XmlWriter* xml) {
  const auto predicates = [&](bool prefix) {
    if (prefix) {
      xml->Element("Prefix", rule.prefix);
    }
    for (const auto& [key, value] : rule.tags) {
      xml->Open("Tag");
      xml->Element("Key", key);
      xml->Element("Value", value);
      xml->Close("Tag");
    }
    if (rule.size_greater_than) {
      xml->Element("ObjectSizeGreaterThan", *rule.size_greater_than);
    }
    if (rule.size_less_than) {
      xml->Element("ObjectSizeLessThan", *rule.size_less_than);
    }
  };
  switch (rule.form) {
    case LifecycleFilterForm::kRulePrefix:
      xml->Element("Prefix", rule.prefix);
      return;
    case LifecycleFilterForm::kEmpty:
      xml->Raw("<Filter></Filter>");
      return;
    case LifecycleFilterForm::kAnd:
      xml->Open("Filter");
      xml->Open("And");
      // Prefix always: an And parsed without one has prefix "", which matches the same
      // objects, and the And keeps at least two predicates.
      predicates(/*prefix=*/true);
      xml->Close("And");
      xml->Close("Filter");
      return;
    default:
      xml->Open("Filter");
      predicates(rule.form == LifecycleFilterForm::kPrefix);
      xml->Close("Filter");
  }
}

}  // namespace

LifecycleErrorKind ClassifyLifecycleError(const Status& status) {
  if (status.field() == kLifecycleXmlField) {
    return LifecycleErrorKind::kMalformedXML;
  }
  if (status.field() == kLifecycleRuleField) {
    return LifecycleErrorKind::kInvalidRequest;
  }
  return LifecycleErrorKind::kInvalidArgument;
}

std::optional<int64_t> ParseIso8601Utc(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.f+](Z|+00:00)
  const std::optional<int> y = Digits(s, 0, 4);
  const std::optional<int> mo = Digits(s, 5, 2);
  const std::optional<int> d = Digits(s, 8, 2);
  const std::optional<int> h = Digits(s, 11, 2);
  const std::optional<int> mi = Digits(s, 14, 2);
  const std::optional<int> se = Digits(s, 17, 2);
  if (!y || !mo || !d || !h || !mi || !se || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 59) {
    return std::nullopt;
  }
  const int64_t days = DaysFromCivil(*y, static_cast<unsigned>(*mo), static_cast<unsigned>(*d));
  if (DaysFromCivil(*y, static_cast<unsigned>(*mo), 1) + *d - 1 != days ||
      (*mo < 12 ? DaysFromCivil(*y, static_cast<unsigned>(*mo) + 1, 1)
                : DaysFromCivil(*y + 1, 1, 1)) <= days) {
    return std::nullopt;  // day past the month's end
  }
  size_t pos = 19;
  int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t start = pos;
    int64_t scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start || pos - start > 9) {
      return std::nullopt;
    }
  }
  const std::string_view zone = s.substr(pos);
  if (zone != "Z" && zone != "+00:00") {
    return std::nullopt;
  }
  return ((days * 24 + *h) * 60 + *mi) * 60000 + *se * 1000 + ms;
}

Result<LifecycleConfiguration> ParseLifecycleXml(std::string_view body) {
  Result<XmlNode> root = ParseXml(body);
  if (!root.has_value()) {
    return Malformed(std::string(root.error().message()));
  }
  if (root->name != "LifecycleConfiguration") {
    return Malformed("root is not LifecycleConfiguration");
  }
  if (root->children.empty()) {
    return Malformed("LifecycleConfiguration without Rule");
  }
  if (root->children.size() > kMaxLifecycleRules) {
    return Malformed(fmt::format("at most {} rules", kMaxLifecycleRules));
  }
  LifecycleConfiguration config;
  std::set<std::string_view> ids;
  for (const XmlNode& node : root->children) {
    if (node.name != "Rule") {
      return Malformed("LifecycleConfiguration holds something other than Rule");
    }
    OC_ASSIGN_OR_RETURN(LifecycleRule rule, ParseRule(node));
    config.rules.push_back(std::move(rule));
  }
  for (const LifecycleRule& rule : config.rules) {
    if (!rule.id.empty() && !ids.insert(rule.id).second) {
      return Invalid("ID", "Rule ID must be unique. Found same ID for more than one rule");
    }
  }
  return config;
}

void FillMissingRuleIds(LifecycleConfiguration* config,
                        const std::function<std::string()>& next_id) {
  std::set<std::string> ids;
  for (const LifecycleRule& rule : config->rules) {
    ids.insert(rule.id);
  }
  for (LifecycleRule& rule : config->rules) {
    if (!rule.id.empty()) {
      continue;
    }
    std::string id = next_id();
    while (id.empty() || ids.contains(id)) {
      id = next_id();
    }
    ids.insert(id);
    rule.id = std::move(id);
  }
}

std::string LifecycleXml(const LifecycleConfiguration& config) {
  XmlWriter xml;
  xml.OpenRoot("LifecycleConfiguration");
  for (const LifecycleRule& rule : config.rules) {
    xml.Open("Rule");
    xml.Element("ID", rule.id);
    RenderFilter(rule, &xml);
    xml.Element("Status", std::string_view(rule.enabled ? "Enabled" : "Disabled"));
    if (rule.expiration_days || rule.expiration_date_ms) {
      xml.Open("Expiration");
      if (rule.expiration_days) {
        xml.Element("Days", uint64_t{*rule.expiration_days});
      } else {
        xml.Element("Date", FormatIso8601(*rule.expiration_date_ms));
      }
      xml.Close("Expiration");
    }
    if (rule.abort_days) {
      xml.Open("AbortIncompleteMultipartUpload");
      xml.Element("DaysAfterInitiation", uint64_t{*rule.abort_days});
      xml.Close("AbortIncompleteMultipartUpload");
    }
    xml.Close("Rule");
  }
  xml.Close("LifecycleConfiguration");
  return std::move(xml).Finish();
}

bool RuleMatchesObject(const LifecycleRule& rule, std::string_view key, uint64_t size,
                       const TagSet& tags) {
  if (!key.starts_with(rule.prefix)) {
    return false;
  }
  for (const auto& want : rule.tags) {
    bool found = false;
    for (const auto& have : tags) {
      found = found || have == want;
    }
    if (!found) {
      return false;
    }
  }
  if (rule.size_greater_than && !(size > *rule.size_greater_than)) {
    return false;
  }
  return !rule.size_less_than || size < *rule.size_less_than;
}

bool RuleMatchesUpload(const LifecycleRule& rule, std::string_view key) {
  return rule.tags.empty() && key.starts_with(rule.prefix);
}

int64_t LifecycleDueMs(int64_t from_ms, uint32_t days, int64_t day_ms) {
  const int64_t due = from_ms + static_cast<int64_t>(days) * day_ms;
  const int64_t rem = due % day_ms;
  if (rem == 0) {
    return due;
  }
  return due >= 0 ? due - rem + day_ms : due - rem;
}

std::optional<LifecycleExpiry> ObjectExpiry(const LifecycleConfiguration& config,
                                            std::string_view key, uint64_t size, const TagSet& tags,
                                            int64_t mtime_ms, int64_t day_ms) {
  std::optional<LifecycleExpiry> best;
  for (const LifecycleRule& rule : config.rules) {
    if (!rule.enabled || !(rule.expiration_days || rule.expiration_date_ms) ||
        !RuleMatchesObject(rule, key, size, tags)) {
      continue;
    }
    const int64_t due = rule.expiration_days
                            ? LifecycleDueMs(mtime_ms, *rule.expiration_days, day_ms)
                            : *rule.expiration_date_ms;
    if (!best || due < best->due_ms) {
      best = LifecycleExpiry{due, rule.id};
    }
  }
  return best;
}

std::optional<LifecycleExpiry> UploadAbortDue(const LifecycleConfiguration& config,
                                              std::string_view key, int64_t initiated_ms,
                                              int64_t day_ms) {
  std::optional<LifecycleExpiry> best;
  for (const LifecycleRule& rule : config.rules) {
    if (!rule.enabled || !rule.abort_days || !RuleMatchesUpload(rule, key)) {
      continue;
    }
    const int64_t due = LifecycleDueMs(initiated_ms, *rule.abort_days, day_ms);
    if (!best || due < best->due_ms) {
      best = LifecycleExpiry{due, rule.id};
    }
  }
  return best;
}

std::string ExpirationHeader(const LifecycleExpiry& expiry) {
  // The id goes inside a quoted string of a header value: a quote or backslash is escaped
  // with a backslash, and a control character (an ID may hold tab, CR or LF) becomes '?', so
  // no ID can end the value or the header.
  std::string id;
  for (char c : expiry.rule_id) {
    if (c == '"' || c == '\\') {
      id.push_back('\\');
    }
    const auto b = static_cast<unsigned char>(c);
    id.push_back(b < 0x20 || b == 0x7f ? '?' : c);
  }
  return fmt::format("expiry-date=\"{}\", rule-id=\"{}\"", FormatHttpDate(expiry.due_ms), id);
}

}  // namespace oc::gateway
