#pragma once
// MappedFile: a file's bytes mapped read-only into this process, for `oc put-chunks --data`
// (docs/decisions/cli-put-chunks-maps-the-file.md). The descriptor PUT sends the chunks
// straight from the page cache: no read into a heap copy (the CLI used to read the file into
// a string stream and copy it out again: 7.7 s of CPU for 448 MiB, 70% in memmove and page
// faults). The mapping is advised sequential, so the kernel reads ahead of the socket.
// Thread safety: a value; bytes() may be read from any thread while it lives.

#include <cstdint>
#include <string>

#include "oc/common/bytes.h"
#include "oc/common/result.h"

namespace oc::cli {

class MappedFile {
 public:
  // Maps the whole file at `path`. kNotFound if it cannot be opened; kIOError (naming the
  // path) if it cannot be mapped. An empty file maps to an empty span.
  static Result<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes, valid while this MappedFile lives. A file truncated meanwhile by
  // someone else raises SIGBUS on access (mmap's contract); the CLI owns its input file.
  ByteSpan bytes() const { return ByteSpan(data_, size_); }

 private:
  MappedFile(const std::byte* data, uint64_t size) : data_(data), size_(size) {}
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace oc::cli
