#pragma once
// S3 additional checksums as the store keeps them (types.h ObjectChecksum): an object's is one
// of its headers, a part's a field of its record. The store never computes them (the gateway
// does); it finds them among headers, keeps a copy's and compares a completion's listed ones
// (multipart_complete.h). Shared by both backends and StreamCopy. Pure, thread-safe.

#include <string>
#include <utility>
#include <vector>

#include "oc/storage/types.h"

namespace oc::storage {

// Stored checksum headers start with this (x-amz-checksum-crc32, ...).
inline constexpr std::string_view kChecksumHeaderPrefix = "x-amz-checksum-";

// The first x-amz-checksum-* entry of `headers` (a part writer's PutOptions::headers and
// AddHeader calls); empty if there is none.
ObjectChecksum ChecksumOfHeaders(const std::vector<std::pair<std::string, std::string>>& headers);

// The headers of a copy whose metadata is replaced: `replace_headers`, plus the source's
// checksum when they carry none (S3 keeps a copy's checksum unless another algorithm is asked
// for, which the gateway does by sending the new checksum in `replace_headers`).
std::vector<std::pair<std::string, std::string>> CopyHeaders(
    const ObjectMeta& source,
    const std::vector<std::pair<std::string, std::string>>& replace_headers);

}  // namespace oc::storage
