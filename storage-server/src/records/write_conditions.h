#pragma once
// The conditional-write rule (WriteConditions, PutOptions::if_none_match, if_match; types.h),
// shared by both backends, which call it where their commit reads the key's current record:
// RocksStore under the key lock, RadosStore in the decision of its guarded commit op. Pure,
// thread-safe.

#include <optional>
#include <string_view>

#include "oc/common/status.h"
#include "oc/storage/types.h"
#include "records/meta_codec.h"

namespace oc::storage {

// OK when `options` lets an object replace `current` (nullopt: the key is absent); else
// kFailedPrecondition/kKey naming "If-None-Match" or "If-Match", or kNotFound/kKey for
// If-Match on an absent key. `name` is the key, for the message.
Status CheckWriteConditions(const WriteConditions& conditions, std::string_view name,
                            const std::optional<ObjectRecord>& current);
// The same with a PutOptions' conditions.
Status CheckWriteConditions(const PutOptions& options, std::string_view name,
                            const std::optional<ObjectRecord>& current);

// A PutOptions' conditions as WriteConditions.
inline WriteConditions ConditionsOf(const PutOptions& options) {
  return WriteConditions{options.if_none_match, options.if_match};
}

// True when `options` carries a condition.
inline bool IsConditional(const WriteConditions& conditions) {
  return conditions.if_none_match || conditions.if_match.has_value();
}
inline bool IsConditional(const PutOptions& options) {
  return IsConditional(ConditionsOf(options));
}

}  // namespace oc::storage
