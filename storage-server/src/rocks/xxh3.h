#pragma once
// XXH3-64, the hash of extent bytes (data-file frames, hash trailers), through libxxhash's
// run-time dispatch when the library has it: Debian's libxxhash exports
// XXH3_64bits_dispatch, which picks the AVX2 or AVX-512 loop for this CPU, while the plain
// XXH3_64bits is its SSE2 build. The values are the same; measured on this machine (64 KiB
// and 1 MiB buffers) 12 and 7 GB/s against 3.3 and 3.1 GB/s
// (docs/decisions/storage-data-files-default.md). cmake/OcDependencies.cmake sets
// OC_HAVE_XXH3_DISPATCH when the library links with it. Include this instead of <xxhash.h> in files
// that hash extent bytes.

#include <xxhash.h>

#if OC_HAVE_XXH3_DISPATCH
#include <xxh_x86dispatch.h>  // XXH3_64bits and XXH3_64bits_update -> the _dispatch forms
#endif
