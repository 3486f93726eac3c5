#pragma once
// The one Status a store returns when its disk or pool is full (docs/decisions/full-disk.md):
// kResourceExhausted with field kNoSpaceField. Each backend maps its own form of "full" to it
// once, at its seam (RocksDB's NoSpace, ENOSPC/EDQUOT from the data files, the free-space
// reserve, RADOS -ENOSPC/-EDQUOT and a full pool); the storage RPC carries it unchanged (code,
// subject, field) and the gateway answers it 507 InsufficientStorage. Thread safety: values.

#include <string>
#include <string_view>

#include "oc/common/status.h"

namespace oc::storage {

// The field of a refusal for lack of space. Not a request field: the gateway never echoes it.
inline constexpr std::string_view kNoSpaceField = "storage.space";

// kResourceExhausted/kNoSpaceField with `message` (for the log; clients get the table's text).
inline Status NoSpace(std::string message) {
  return Status::ResourceExhausted(std::string(kNoSpaceField), std::move(message));
}

inline bool IsNoSpace(const Status& s) {
  return s.code() == Code::kResourceExhausted && s.field() == kNoSpaceField;
}

}  // namespace oc::storage
