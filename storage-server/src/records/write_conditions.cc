#include "records/write_conditions.h"

#include <string>

#include "records/multipart_names.h"

namespace oc::storage {

Status CheckWriteConditions(const PutOptions& options, std::string_view name,
                            const std::optional<ObjectRecord>& current) {
  return CheckWriteConditions(ConditionsOf(options), name, current);
}

Status CheckWriteConditions(const WriteConditions& options, std::string_view name,
                            const std::optional<ObjectRecord>& current) {
  if (options.if_none_match && current.has_value()) {
    return Status(Code::kFailedPrecondition, Subject::kKey, "If-None-Match",
                  "the object " + std::string(name) + " exists");
  }
  if (options.if_match.has_value()) {
    if (!current.has_value()) {
      return Status::NotFound(Subject::kKey, std::string(name));
    }
    if (NormalizeEtag(*options.if_match) != current->meta.etag) {
      return Status(Code::kFailedPrecondition, Subject::kKey, "If-Match",
                    "the object " + std::string(name) + " has another ETag");
    }
  }
  return Status::Ok();
}

}  // namespace oc::storage
