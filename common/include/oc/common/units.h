#pragma once
// Parsing of the size, duration and number strings used in config files and flags:
// "64MiB", "1.5GB", "512", "30s", "250ms", "100us". One helper for every module so
// `conf/*.toml` reads the same everywhere. Pure and thread-safe.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/result.h"

namespace oc {

// Bytes from "<number>[unit]": units B, KB/MB/GB/TB (powers of 1000) and KiB/MiB/GiB/TiB
// (powers of 1024), case-sensitive, optional space before the unit; fractions allowed
// ("1.5MiB"). A bare number is bytes. kInvalidArgument (naming `field`) on bad syntax,
// a negative value or overflow past 2^64-1.
Result<uint64_t> ParseSize(std::string_view text, std::string_view field = "size");

// Duration from "<number><unit>": ns, us, ms, s, m, h. A unit is required.
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text,
                                               std::string_view field = "duration");

// Decimal unsigned integer, the whole string, no sign, no spaces, no overflow.
Result<uint64_t> ParseUint64(std::string_view text, std::string_view field);

// "1.50 MiB": for logs and human-facing output.
std::string FormatSize(uint64_t bytes);

}  // namespace oc
