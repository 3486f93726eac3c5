#pragma once
// S3 bucket lifecycle (PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration, the
// x-amz-expiration answer header): the <LifecycleConfiguration> XML both ways, S3's validation
// of it, the rule matcher and the due times (docs/decisions/lifecycle.md).
//
// Served subset: Expiration (Days or Date), AbortIncompleteMultipartUpload
// (DaysAfterInitiation), filters Prefix (the legacy rule-level one or Filter/Prefix), Tag,
// ObjectSizeGreaterThan, ObjectSizeLessThan and And. Versioning is never enabled here, so
// NoncurrentVersionExpiration, NoncurrentVersionTransition and
// Expiration/ExpiredObjectDeleteMarker are refused, and so is Transition (one storage class).
//
// A lifecycle "day" is `day_ms` long (config [lifecycle] day_seconds, 86400 s as S3): a due
// time is the object's mtime plus Days days, rounded up to the next multiple of day_ms since
// the Unix epoch (with day_ms = 86400000, S3's "next midnight UTC").
// Thread safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"
#include "s3/s3_tagging.h"

namespace oc::gateway {

// S3's limits on a configuration.
inline constexpr size_t kMaxLifecycleRules = 1000;
inline constexpr size_t kMaxLifecycleRuleIdChars = 255;
// Days values above this are refused (S3 takes a 32-bit signed integer).
inline constexpr uint32_t kMaxLifecycleDays = 2147483647;

// How a rule names the objects it applies to; kept so the configuration renders back the way
// it was put.
enum class LifecycleFilterForm : uint8_t {
  kRulePrefix,   // <Rule><Prefix>p</Prefix> (S3's legacy form)
  kEmpty,        // <Filter/>: every object
  kPrefix,       // <Filter><Prefix/>
  kTag,          // <Filter><Tag/>
  kSizeGreater,  // <Filter><ObjectSizeGreaterThan/>
  kSizeLess,     // <Filter><ObjectSizeLessThan/>
  kAnd,          // <Filter><And> any of the above, at least two predicates </And>
};

struct LifecycleRule {
  std::string id;  // may be empty when the request gave none
  bool enabled = false;
  LifecycleFilterForm form = LifecycleFilterForm::kEmpty;
  std::string prefix;
  TagSet tags;  // all must be on the object
  std::optional<uint64_t> size_greater_than;
  std::optional<uint64_t> size_less_than;
  std::optional<uint32_t> expiration_days;
  std::optional<int64_t> expiration_date_ms;  // a midnight UTC
  std::optional<uint32_t> abort_days;         // AbortIncompleteMultipartUpload

  bool operator==(const LifecycleRule&) const = default;
};

struct LifecycleConfiguration {
  std::vector<LifecycleRule> rules;
  bool operator==(const LifecycleConfiguration&) const = default;
};

// What a refusal answers. A refusal is kInvalidArgument whose field is the element at fault;
// the S3 code follows from the field:
//   kLifecycleXmlField ("xml")      MalformedXML: not XML, wrong shape, unknown element,
//                                   Status not Enabled|Disabled, not a number, over 1000 rules
//   kLifecycleRuleField ("Rule")    InvalidRequest: a rule without an action, a tag filter
//                                   with AbortIncompleteMultipartUpload
//   any other element name          InvalidArgument naming it (ID length or duplicate, Days,
//                                   Date, sizes, tags, the refused versioning elements)
inline constexpr std::string_view kLifecycleXmlField = "xml";
inline constexpr std::string_view kLifecycleRuleField = "Rule";
enum class LifecycleErrorKind : uint8_t { kMalformedXML, kInvalidRequest, kInvalidArgument };
LifecycleErrorKind ClassifyLifecycleError(const Status& status);

// A PutBucketLifecycleConfiguration body, validated as above.
Result<LifecycleConfiguration> ParseLifecycleXml(std::string_view body);

// Gives every rule without an ID one, as S3 does (s3-tests test_lifecycle_get_no_id expects an
// ID on every rule read back): `next_id()` is asked until it names an ID no rule has.
// `next_id` must return IDs of at most kMaxLifecycleRuleIdChars bytes.
void FillMissingRuleIds(LifecycleConfiguration* config,
                        const std::function<std::string()>& next_id);

// The GetBucketLifecycleConfiguration answer (and the stored form): parses back to `config`.
std::string LifecycleXml(const LifecycleConfiguration& config);

// True when `rule` (enabled or not) selects the object: key under its prefix, every tag of
// the rule on the object, size within the size bounds (strict, as S3).
bool RuleMatchesObject(const LifecycleRule& rule, std::string_view key, uint64_t size,
                       const TagSet& tags);
// True when `rule` selects an upload of `key`: prefix only; a rule with tags never does.
bool RuleMatchesUpload(const LifecycleRule& rule, std::string_view key);

// `from_ms` plus `days` lifecycle days, rounded up to a multiple of day_ms (day_ms > 0).
int64_t LifecycleDueMs(int64_t from_ms, uint32_t days, int64_t day_ms);

struct LifecycleExpiry {
  int64_t due_ms = 0;
  std::string rule_id;
  bool operator==(const LifecycleExpiry&) const = default;
};
// The earliest expiration of an object by the enabled rules that select it, or nullopt.
std::optional<LifecycleExpiry> ObjectExpiry(const LifecycleConfiguration& config,
                                            std::string_view key, uint64_t size, const TagSet& tags,
                                            int64_t mtime_ms, int64_t day_ms);
// The earliest abort time of an upload initiated at `initiated_ms`, or nullopt.
std::optional<LifecycleExpiry> UploadAbortDue(const LifecycleConfiguration& config,
                                              std::string_view key, int64_t initiated_ms,
                                              int64_t day_ms);

// The x-amz-expiration value: expiry-date="Fri, 23 Dec 2012 00:00:00 GMT", rule-id="id". In
// the id, a quote or backslash is backslash-escaped and control characters written as '?'.
std::string ExpirationHeader(const LifecycleExpiry& expiry);

// "2026-12-01T00:00:00Z" or with fraction / "+00:00" -> unix ms; nullopt when malformed.
std::optional<int64_t> ParseIso8601Utc(std::string_view text);

}  // namespace oc::gateway
