#pragma once
// S3 object tagging (PutObjectTagging, GetObjectTagging, x-amz-tagging on PutObject, CopyObject
// and CreateMultipartUpload): S3's limits on a tag set, the x-amz-tagging header (URL query
// form, "k1=v1&k2=v2") and the <Tagging> XML body, both ways.
// Thread safety: pure functions.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/result.h"

namespace oc::gateway {

// Tags in the order given: (key, value). The same type as storage::Tags (oc/storage/types.h),
// spelled out so this library stays free of the Store API.
using TagSet = std::vector<std::pair<std::string, std::string>>;

// S3's limits on an object's tags: at most 10, keys of 1..128 and values of 0..256 Unicode
// characters (code points of well-formed UTF-8) without control characters (U+0000..U+001F,
// U+007F), keys unique.
inline constexpr size_t kMaxObjectTags = 10;
inline constexpr size_t kMaxTagKeyChars = 128;
inline constexpr size_t kMaxTagValueChars = 256;

// The field a tagging Status names when the XML itself is malformed (MalformedXML); every
// other tagging error is S3's InvalidTag.
inline constexpr std::string_view kTaggingXmlField = "xml";

// OK when `tags` is within S3's limits; else kInvalidArgument naming `field` and saying which
// limit (InvalidTag).
Status CheckTags(const TagSet& tags, std::string_view field);

// The x-amz-tagging header: "&"-separated key=value pairs, each URL-encoded as a query string
// ('+' is a space, %XX a byte; a pair without '=' has an empty value). An empty header is no
// tags. kInvalidArgument naming "x-amz-tagging" for a malformed escape or a set over the
// limits.
Result<TagSet> ParseTaggingHeader(std::string_view header);

// A PutObjectTagging body: <Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>.
// kInvalidArgument with field kTaggingXmlField when it is not that shape (no TagSet, a Tag
// without Key or Value, not XML); naming "Tagging" for a set over the limits.
Result<TagSet> ParseTaggingXml(std::string_view body);

// The GetObjectTagging answer for `tags`.
std::string TaggingXml(const TagSet& tags);

}  // namespace oc::gateway
