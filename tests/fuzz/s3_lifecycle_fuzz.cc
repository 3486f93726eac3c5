// Fuzzes the S3 lifecycle configuration XML (gateway/src/s3/s3_lifecycle.h): the input is a
// PutBucketLifecycleConfiguration body.
// Whatever parses is within S3's limits (at most 1000 rules, IDs of at most 255 bytes and
// unique, Days > 0, an action in every rule, a Date at midnight UTC) and survives a round
// trip: the GetBucketLifecycleConfiguration answer (LifecycleXml) parses back to the same
// configuration, and renders to the same bytes; the x-amz-expiration value naming any rule
// holds no CR or LF. A refusal is an invalid argument that names its field.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "s3/s3_lifecycle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace gw = oc::gateway;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const oc::Result<gw::LifecycleConfiguration> config = gw::ParseLifecycleXml(input);
  if (!config.has_value()) {
    OC_CHECK(config.error().code() == oc::Code::kInvalidArgument);
    OC_CHECK(!config.error().field().empty());
    return 0;
  }
  OC_CHECK(!config->rules.empty() && config->rules.size() <= gw::kMaxLifecycleRules);
  std::set<std::string> ids;
  for (const gw::LifecycleRule& rule : config->rules) {
    OC_CHECK(rule.id.size() <= gw::kMaxLifecycleRuleIdChars);
    OC_CHECK(rule.id.empty() || ids.insert(rule.id).second);
    OC_CHECK(rule.expiration_days || rule.expiration_date_ms || rule.abort_days);
    OC_CHECK(!rule.expiration_days || *rule.expiration_days > 0);
    OC_CHECK(!rule.abort_days || *rule.abort_days > 0);
    OC_CHECK(!rule.expiration_date_ms || *rule.expiration_date_ms % 86400000 == 0);
    // The x-amz-expiration value naming this rule stays one header line.
    const std::string header = gw::ExpirationHeader({0, rule.id});
    OC_CHECK(header.find_first_of("\r\n") == std::string::npos);
  }
  const std::string rendered = gw::LifecycleXml(*config);
  const oc::Result<gw::LifecycleConfiguration> again = gw::ParseLifecycleXml(rendered);
  OC_CHECK(again.has_value() && *again == *config);
  OC_CHECK(gw::LifecycleXml(*again) == rendered);
  return 0;
}
