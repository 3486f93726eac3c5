# Every third-party dependency, found once. All come from Debian 12 packages that
# tools/bootstrap installs.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# libxxhash built with its x86 dispatcher (Debian's is) exports XXH3_64bits_dispatch: the
# AVX2/AVX-512 XXH3 chosen at run time, 2-4x the SSE2 XXH3_64bits here (storage-server's
# src/rocks/xxh3.h uses it for extent hashes).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${XXHASH_INCLUDE_DIRS})
set(CMAKE_REQUIRED_LIBRARIES ${XXHASH_LINK_LIBRARIES})
check_cxx_source_compiles([[
#include <xxhash.h>
#include <xxh_x86dispatch.h>
int main() { return static_cast<int>(XXH3_64bits_dispatch("", 0) & 1); }
]] OC_HAVE_XXH3_DISPATCH)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_LIBRARIES)

find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(OpenSSL REQUIRED)
# S3 checksums (gateway/src/auth/checksum.cc): zlib's CRC32 and ISA-L's CRC32C (libisal-dev;
# crc32_iscsi, with its own CPU dispatch). No pkg-config file in Debian 12's libisal-dev.
find_package(ZLIB REQUIRED)
find_library(ISAL_LIBRARY isal REQUIRED)
find_path(ISAL_INCLUDE_DIR isa-l/crc.h REQUIRED)
add_library(oc_isal INTERFACE)
target_link_libraries(oc_isal INTERFACE ${ISAL_LIBRARY})
target_include_directories(oc_isal SYSTEM INTERFACE ${ISAL_INCLUDE_DIR})
find_package(tomlplusplus REQUIRED)
# JSON for the `oc` CLI's request files and output (header-only).
find_package(nlohmann_json 3 REQUIRED)
pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx)
# RocksDB's own CMake package drags in every compression library's CMake config; the
# shared library already links them, so a plain library lookup is enough.
find_library(ROCKSDB_LIBRARY rocksdb REQUIRED)
find_path(ROCKSDB_INCLUDE_DIR rocksdb/db.h REQUIRED)
add_library(oc_rocksdb INTERFACE)
target_link_libraries(oc_rocksdb INTERFACE ${ROCKSDB_LIBRARY})
target_include_directories(oc_rocksdb SYSTEM INTERFACE ${ROCKSDB_INCLUDE_DIR})

# librados (Debian's librados-dev, Ceph 16): the RADOS backend's C API. No pkg-config file.
if(OC_WITH_RADOS)
  find_library(RADOS_LIBRARY rados REQUIRED)
  find_path(RADOS_INCLUDE_DIR rados/librados.h REQUIRED)
  add_library(oc_rados INTERFACE)
  target_link_libraries(oc_rados INTERFACE ${RADOS_LIBRARY})
  target_include_directories(oc_rados SYSTEM INTERFACE ${RADOS_INCLUDE_DIR})
endif()

# The server executables' allocator (oc_malloc): tcmalloc, the minimal variant of Debian's
# libgoogle-perftools-dev. glibc's malloc hands a multi-MiB buffer (librados' copy of each
# write piece, read replies) fresh pages again and again, and on this machine every first
# touch of a page costs more than copying it (docs/decisions/server-allocator-tcmalloc.md).
# Linked whole (--no-as-needed): nothing calls it by name, it replaces malloc. Sanitizers
# bring their own allocator, so they build without it.
add_library(oc_malloc INTERFACE)
if(OC_TCMALLOC AND NOT OC_SANITIZE AND NOT OC_FUZZ)
  pkg_check_modules(TCMALLOC REQUIRED libtcmalloc_minimal)
  find_library(TCMALLOC_LIBRARY ${TCMALLOC_LIBRARIES} HINTS ${TCMALLOC_LIBRARY_DIRS} REQUIRED)
  target_link_libraries(oc_malloc INTERFACE
    "-Wl,--push-state,--no-as-needed" ${TCMALLOC_LIBRARY} "-Wl,--pop-state")
endif()

if(OC_BUILD_TESTS AND NOT OC_FUZZ)
  find_package(GTest REQUIRED)
endif()
if(OC_BUILD_BENCH AND NOT OC_FUZZ)
  find_package(benchmark REQUIRED)
endif()
