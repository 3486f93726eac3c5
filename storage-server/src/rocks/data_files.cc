#include "rocks/data_files.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/core.h>

#include "oc/common/log.h"
#include "oc/storage/no_space.h"
#include "oc/storage/options.h"
#include "rocks/group_sync.h"
#include "rocks/xxh3.h"

namespace oc::storage {
namespace {

// The largest frame: a mapping of an active file reaches this far past roll_bytes.
constexpr uint64_t kMaxFrameBytes = kFrameHeaderBytes + kMaxExtentBytes;
const Logger kLog{"storage"};
constexpr uint64_t kHeaderHashedBytes = 40;
// Read's fused copy-and-hash works in pieces that stay in L2 between the copy and the hash.
constexpr uint64_t kHashPieceBytes = 128 << 10;

// The one translation of this file's system-call errors: a full disk or quota is the store's
// "no space" (oc/storage/no_space.h), anything else kIOError.
Status Errno(std::string_view what, const std::string& path) {
  const int e = errno;
  std::string message = fmt::format("{} {}: {}", what, path, std::strerror(e));
  if (e == ENOSPC || e == EDQUOT) {
    return NoSpace(std::move(message));
  }
  return Status::IOError(std::move(message));
}

std::string FileName(uint32_t number) { return fmt::format("{:06}.ocd", number); }

// The number of a data file's name ("000012.ocd" -> 12); 0 for any other name.
uint32_t ParseFileName(std::string_view name) {
  constexpr std::string_view kSuffix = ".ocd";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix) || name.size() > 14) {
    return 0;
  }
  uint64_t n = 0;
  for (char c : name.substr(0, name.size() - kSuffix.size())) {
    if (c < '0' || c > '9') {
      return 0;
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n > 0 && n <= UINT32_MAX ? static_cast<uint32_t>(n) : 0;
}

// OC_TEST_SKIP_DATA_FILE_SYNC=1 skips the fdatasync of the data files (AwaitSynced still
// groups and returns OK), so acknowledged bytes are lost at a power cut: the deliberately
// broken build of the power-loss test (tests/powerloss, docs/decisions/powerloss-test.md).
// Never for production: the store warns at open.
bool TestSkipsDataFileSync() {
  const char* v = std::getenv("OC_TEST_SKIP_DATA_FILE_SYNC");
  return v != nullptr && std::string_view(v) == "1";
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Errno("open", dir);
  }
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Errno("fsync", dir);
}

void EncodeHeader(uint64_t data_id, uint64_t index, uint64_t length, uint64_t hash,
                  std::byte* out) {
  PutLittleEndian32(kFrameMagic, out);
  PutLittleEndian32(0, out + 4);
  PutLittleEndian64(data_id, out + 8);
  PutLittleEndian64(index, out + 16);
  PutLittleEndian64(length, out + 24);
  PutLittleEndian64(hash, out + 32);
  PutLittleEndian64(XXH3_64bits(out, kHeaderHashedBytes), out + kHeaderHashedBytes);
}

Status HashMismatch(const ExtentLocator& loc) {
  return Status::Corruption(
      fmt::format("data file {} extent at {}: hash mismatch", loc.file, loc.offset));
}

// A read-only shared mapping of a data file; unmapped when the last holder lets go.
struct Mapping {
  const std::byte* addr = nullptr;
  uint64_t bytes = 0;
  Mapping(const std::byte* a, uint64_t n) : addr(a), bytes(n) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { ::munmap(const_cast<std::byte*>(addr), bytes); }
};

}  // namespace

class DataFiles::File {
 public:
  File(uint32_t number, std::string path, int fd, uint64_t end)
      : number_(number), path_(std::move(path)), fd_(fd), end_(end), writeback_from_(end) {}
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint32_t number() const { return number_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t end() const { return end_.load(std::memory_order_acquire); }
  // REQUIRES: DataFiles::mu_ held (appends reserve under it).
  uint64_t Reserve(uint64_t bytes) { return end_.fetch_add(bytes, std::memory_order_acq_rel); }
  // Gives back the last reservation, [offset, offset + bytes), if nothing was reserved after
  // it; returns whether it did. REQUIRES: DataFiles::mu_ held.
  bool Unreserve(uint64_t offset, uint64_t bytes) {
    uint64_t expected = offset + bytes;
    return end_.compare_exchange_strong(expected, offset, std::memory_order_acq_rel);
  }
  std::atomic<uint64_t>& live() { return live_; }
  // Where the next write-back kick starts (DataFiles::StartWriteback).
  std::atomic<uint64_t>& writeback_from() { return writeback_from_; }
  // REQUIRES: DataFiles::mu_ held, the file active (so no pin is handed out once sealed).
  std::shared_ptr<const void> Pin() const { return pin_; }
  bool Pinned() const {
    const bool pinned = pin_.use_count() > 1;
    std::atomic_thread_fence(std::memory_order_acquire);  // a released pin's writes are seen
    return pinned;
  }

  // The file's mapping, created on first use: `map_bytes` long (past the end for a file still
  // being appended to: pages past the end are never touched, as no locator names them).
  Result<std::shared_ptr<const Mapping>> Map(uint64_t map_bytes) {
    std::lock_guard lock(map_mu_);
    if (mapping_ == nullptr) {
      void* addr = ::mmap(nullptr, map_bytes, PROT_READ, MAP_SHARED, fd_, 0);
      if (addr == MAP_FAILED) {
        return Errno("mmap", path_);
      }
      mapping_ = std::make_shared<const Mapping>(static_cast<const std::byte*>(addr), map_bytes);
    }
    return mapping_;
  }

  uint64_t retire_sequence = 0;  // guarded by DataFiles::mu_; set once the file is unlinked
  bool retired = false;          // guarded by DataFiles::mu_
  // A sync of the file failed: its unsynced bytes may be lost without a later fdatasync
  // saying so (the kernel reports a write-back error once), so no append to it is ever
  // acknowledged again. Guarded by DataFiles::mu_.
  bool poisoned = false;

 private:
  const uint32_t number_;
  const std::string path_;
  const int fd_;
  std::atomic<uint64_t> end_;
  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> writeback_from_;
  const std::shared_ptr<const int> pin_ = std::make_shared<const int>(0);
  std::mutex map_mu_;
  std::shared_ptr<const Mapping> mapping_;  // guarded by map_mu_
};

std::string EncodeLocator(const ExtentLocator& loc) {
  std::string out(kLocatorBytes, '\0');
  auto* p = reinterpret_cast<std::byte*>(out.data());
  PutLittleEndian64(loc.file, p);
  PutLittleEndian64(loc.offset, p + 8);
  PutLittleEndian64(loc.length, p + 16);
  PutLittleEndian64(loc.hash, p + 24);
  return out;
}

Result<ExtentLocator> DecodeLocator(std::string_view value) {
  if (value.size() != kLocatorBytes) {
    return Status::Corruption("extent locator has the wrong length");
  }
  const auto* p = reinterpret_cast<const std::byte*>(value.data());
  const uint64_t file = GetLittleEndian64(p);
  if (file == 0 || file > UINT32_MAX) {
    return Status::Corruption("extent locator names no data file");
  }
  return ExtentLocator{static_cast<uint32_t>(file), GetLittleEndian64(p + 8),
                       GetLittleEndian64(p + 16), GetLittleEndian64(p + 24)};
}

DataFiles::DataFiles(std::string dir, uint64_t roll_bytes, bool sync, uint64_t writeback_bytes)
    : dir_(std::move(dir)), roll_bytes_(roll_bytes), writeback_bytes_(sync ? writeback_bytes : 0) {
  if (sync && TestSkipsDataFileSync()) {
    kLog.Warn(
        "OC_TEST_SKIP_DATA_FILE_SYNC=1: data files are never synced, so acknowledged PUTs can "
        "be lost at a power cut (a test-only switch: never set it in production)");
    sync_ = std::make_unique<GroupSync>([] { return Status::Ok(); });
  } else if (sync) {
    sync_ = std::make_unique<GroupSync>([this] { return SyncDirty(); });
  }
}

DataFiles::~DataFiles() {
  if (sync_ != nullptr) {
    sync_->StopBackground();  // its sync action reads the members destroyed before sync_
  }
}

Result<std::unique_ptr<DataFiles>> DataFiles::Open(std::string dir, uint64_t roll_bytes, bool sync,
                                                   uint64_t writeback_bytes) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::IOError("cannot create " + dir + ": " + ec.message());
  }
  if (created && sync) {
    OC_RETURN_IF_ERROR(SyncDir(std::filesystem::path(dir).parent_path().string()));
  }
  std::unique_ptr<DataFiles> files(
      new DataFiles(std::move(dir), roll_bytes, sync, writeback_bytes));
  OC_RETURN_IF_ERROR(files->Scan());
  return files;
}

Status DataFiles::Scan() {
  std::error_code ec;
  std::lock_guard lock(mu_);
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const uint32_t number = ParseFileName(entry.path().filename().string());
    if (number == 0) {
      continue;
    }
    const std::string path = entry.path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Errno("open", path);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      Status s = Errno("stat", path);
      ::close(fd);
      return s;
    }
    next_number_ = std::max(next_number_, number + 1);
    if (st.st_size == 0) {  // created, never appended to: nothing can name it
      ::close(fd);
      ::unlink(path.c_str());
      continue;
    }
    files_[number] = std::make_shared<File>(number, path, fd, static_cast<uint64_t>(st.st_size));
  }
  if (ec) {
    return Status::IOError("cannot list " + dir_ + ": " + ec.message());
  }
  return Status::Ok();
}

bool DataFiles::empty() const {
  std::lock_guard lock(mu_);
  return files_.empty();
}

std::shared_ptr<DataFiles::File> DataFiles::Find(uint32_t number) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(number);
  return it == files_.end() ? nullptr : it->second;
}

Result<DataFiles::Reserved> DataFiles::Reserve(uint64_t frame_bytes) {
  std::lock_guard lock(mu_);
  if (active_ == nullptr || (active_->end() > 0 && active_->end() + frame_bytes > roll_bytes_)) {
    const uint32_t number = next_number_;
    const std::string path = (std::filesystem::path(dir_) / FileName(number)).string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Errno("create", path);
    }
    ++next_number_;
    active_ = std::make_shared<File>(number, path, fd, 0);
    files_[number] = active_;
    // The file's name must be durable before any record can name its bytes.
    if (sync_ != nullptr) {
      if (Status s = SyncDir(dir_); !s.ok()) {
        active_.reset();  // the next append tries a new file (an empty one goes at open)
        return s;
      }
    }
  }
  return Reserved{active_, active_->Reserve(frame_bytes), active_->Pin()};
}

Result<DataFiles::Appended> DataFiles::Append(uint64_t data_id, uint64_t index, ByteSpan data) {
  const uint64_t hash = XXH3_64bits(data.data(), data.size());
  const uint64_t frame = kFrameHeaderBytes + data.size();
  OC_ASSIGN_OR_RETURN(Reserved reserved, Reserve(frame));
  const std::shared_ptr<File>& file = reserved.file;
  std::byte header[kFrameHeaderBytes];
  EncodeHeader(data_id, index, data.size(), hash, header);
  iovec iov[2] = {{header, kFrameHeaderBytes}, {const_cast<std::byte*>(data.data()), data.size()}};
  uint64_t done = 0;
  while (done < frame) {
    // Skip what earlier (short) writes covered.
    iovec rest[2];
    int n = 0;
    uint64_t skip = done;
    for (const iovec& v : iov) {
      if (skip >= v.iov_len) {
        skip -= v.iov_len;
        continue;
      }
      rest[n++] = {static_cast<std::byte*>(v.iov_base) + skip, v.iov_len - skip};
      skip = 0;
    }
    const ssize_t w = ::pwritev(file->fd(), rest, n, static_cast<off_t>(reserved.offset + done));
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      Status s = Errno("write", file->path());
      GiveBack(*file, reserved.offset, frame);
      return s;
    }
    done += static_cast<uint64_t>(w);
  }
  if (writeback_bytes_ != 0) {
    StartWriteback(*file, reserved.offset + frame);
  }
  Appended out{ExtentLocator{file->number(), reserved.offset, data.size(), hash}, 0,
               std::move(reserved.pin)};
  if (sync_ != nullptr) {
    // Under mu_ with the poison check: an append either sees the file poisoned (a sync of it
    // failed, which may have dropped these bytes unreported) or gets a ticket that the failed
    // sync's window or a later sync of the file covers.
    std::lock_guard lock(mu_);
    if (file->poisoned) {
      return Status::IOError(fmt::format("data file {}: an earlier sync failed", file->number()));
    }
    dirty_[file->number()] = file;
    out.ticket = sync_->Written();  // after the file is in dirty_: the next sync covers it
  }
  if (writeback_bytes_ != 0 && sync_bytes_.fetch_add(frame) + frame >= kSyncBehindBytes &&
      sync_bytes_.exchange(0) >= kSyncBehindBytes) {
    syncs_behind_.fetch_add(1, std::memory_order_relaxed);
    sync_->SyncInBackground(out.ticket);
  }
  return out;
}

void DataFiles::StartWriteback(File& file, uint64_t end) {
  // Without it every byte of a large PUT is still dirty when its commit's fdatasync starts
  // (the kernel's own write-back begins only at a tenth of memory), so the disk idles while
  // the body arrives and the sync then writes it all while the request waits. Kicked ranges
  // may hold frames whose writes are still running (concurrent appends): the kernel skips
  // pages not yet dirty, and the fdatasync before any record names them covers them anyway.
  std::atomic<uint64_t>& from = file.writeback_from();
  uint64_t start = from.load(std::memory_order_relaxed);
  while (end > start && end - start >= writeback_bytes_) {
    if (from.compare_exchange_weak(start, end, std::memory_order_relaxed)) {
      // Errors are the fdatasync's to report; this only starts the disk writes earlier.
      (void)::sync_file_range(file.fd(), static_cast<off_t>(start), static_cast<off_t>(end - start),
                              SYNC_FILE_RANGE_WRITE);
      writeback_kicks_.fetch_add(1, std::memory_order_relaxed);
      writeback_kicked_bytes_.fetch_add(end - start, std::memory_order_relaxed);
      return;
    }
  }
}

Status DataFiles::AwaitSynced(uint64_t ticket) {
  return sync_ != nullptr ? sync_->AwaitSynced(ticket) : Status::Ok();
}

Status DataFiles::SyncDirty() {
  std::map<uint32_t, std::shared_ptr<File>> dirty;
  {
    std::lock_guard lock(mu_);
    dirty.swap(dirty_);
  }
  for (const auto& [number, file] : dirty) {
    if (::fdatasync(file->fd()) != 0) {
      Status s = Errno("fdatasync", file->path());
      // Every file of this sync may have lost bytes: none takes appends again, so after
      // Rearm new appends go to a fresh file whose syncs report its own errors.
      std::lock_guard lock(mu_);
      for (const auto& [n, f] : dirty) {
        f->poisoned = true;
        if (f == active_) {
          active_.reset();
        }
      }
      return s;
    }
  }
  return Status::Ok();
}

void DataFiles::GiveBack(File& file, uint64_t offset, uint64_t frame_bytes) {
  std::lock_guard lock(mu_);
  // The last reservation: cut the file back to where it was, so it keeps no torn frame at its
  // end. Otherwise a later frame was reserved past it and the range stays garbage.
  if (file.Unreserve(offset, frame_bytes)) {
    if (::ftruncate(file.fd(), static_cast<off_t>(offset)) != 0) {
      kLog.Warn("data file {}: cannot cut a failed append back to {}: {}", file.number(), offset,
                std::strerror(errno));
    }
  }
}

bool DataFiles::Rearm() {
  if (sync_ == nullptr) {
    return false;
  }
  std::lock_guard lock(mu_);  // no append takes a ticket meanwhile (Append)
  return sync_->Rearm();
}

Status DataFiles::Read(const ExtentLocator& loc, uint64_t within, MutableByteSpan dest) const {
  if (within > loc.length || dest.size() > loc.length - within) {
    return Status::Corruption("read past the end of a data file extent");
  }
  // From the file's mapping, not by pread: a warm read is then one user-space copy with no
  // system call and no page-cache lookup per page (perf of the HTTP-body layerwise GET:
  // pread's copy and lookups were the layout's extra cost;
  // docs/decisions/storage-data-files-default.md).
  OC_ASSIGN_OR_RETURN(ExtentView view, MapExtent(loc));
  if (within != 0 || dest.size() != loc.length) {
    if (XXH3_64bits(view.bytes.data(), view.bytes.size()) != loc.hash) {
      return HashMismatch(loc);
    }
    std::memcpy(dest.data(), view.bytes.data() + within, dest.size());
    return Status::Ok();
  }
  // The whole extent: copy a piece, hash it from the destination while it is still in cache
  // (the bytes handed on are the bytes verified).
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (uint64_t pos = 0; pos < loc.length; pos += kHashPieceBytes) {
    const uint64_t n = std::min(kHashPieceBytes, loc.length - pos);
    std::memcpy(dest.data() + pos, view.bytes.data() + pos, n);
    XXH3_64bits_update(&state, dest.data() + pos, n);
  }
  if (XXH3_64bits_digest(&state) != loc.hash) {
    return HashMismatch(loc);
  }
  return Status::Ok();
}

Result<ExtentView> DataFiles::MapExtent(const ExtentLocator& loc) const {
  std::shared_ptr<File> file;
  bool active = false;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(loc.file);
    if (it != files_.end()) {
      file = it->second;
      active = file == active_;
    }
  }
  if (file == nullptr) {
    return Status::Corruption(fmt::format("data file {} is missing", loc.file));
  }
  const uint64_t end = file->end();
  if (loc.offset + loc.frame_bytes() > end) {
    return Status::Corruption(fmt::format("extent locator past the end of data file {}", loc.file));
  }
  // A file still appended to is mapped as far as it can grow; a sealed one to its end.
  OC_ASSIGN_OR_RETURN(std::shared_ptr<const Mapping> map,
                      file->Map(active ? std::max(end, roll_bytes_ + kMaxFrameBytes) : end));
  if (loc.offset + loc.frame_bytes() > map->bytes) {
    return Status::Corruption(fmt::format("extent locator past the end of data file {}", loc.file));
  }
  const ByteSpan bytes(map->addr + loc.offset + kFrameHeaderBytes, loc.length);
  return ExtentView{bytes, std::move(map)};
}

namespace {

// Whether every page of `bytes` (inside a file mapping) is in the page cache.
bool Resident(ByteSpan bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(bytes.data()) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size();
  std::vector<unsigned char> pages((end - start + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(start), end - start, pages.data()) != 0) {
    return false;
  }
  return std::all_of(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1) != 0; });
}

}  // namespace

Result<ExtentView> DataFiles::View(const ExtentLocator& loc, bool resident_only) const {
  OC_ASSIGN_OR_RETURN(ExtentView view, MapExtent(loc));
  if (resident_only && !Resident(view.bytes)) {
    return Status::Unavailable("not in memory");
  }
  if (XXH3_64bits(view.bytes.data(), view.bytes.size()) != loc.hash) {
    return HashMismatch(loc);
  }
  return view;
}

void DataFiles::AddLive(const FileBytes& bytes) {
  for (const auto& [number, n] : bytes.items) {
    if (std::shared_ptr<File> f = Find(number)) {
      f->live().fetch_add(n, std::memory_order_relaxed);
    }
  }
}

void DataFiles::SubLive(const FileBytes& bytes) {
  for (const auto& [number, n] : bytes.items) {
    std::shared_ptr<File> f = Find(number);
    if (f == nullptr) {
      continue;
    }
    uint64_t v = f->live().load(std::memory_order_relaxed);
    while (!f->live().compare_exchange_weak(v, v >= n ? v - n : 0, std::memory_order_relaxed)) {
    }
  }
}

void DataFiles::SetLive(const std::map<uint32_t, uint64_t>& live) {
  std::lock_guard lock(mu_);
  for (const auto& [number, file] : files_) {
    auto it = live.find(number);
    file->live().store(it == live.end() ? 0 : it->second, std::memory_order_relaxed);
  }
}

std::vector<DataFileInfo> DataFiles::Files() const {
  std::lock_guard lock(mu_);
  std::vector<DataFileInfo> out;
  for (const auto& [number, file] : files_) {
    if (!file->retired) {
      out.push_back(DataFileInfo{number, file->end(), file->live().load(std::memory_order_relaxed),
                                 file == active_, file->Pinned()});
    }
  }
  return out;
}

void DataFiles::Seal() {
  std::lock_guard lock(mu_);
  active_.reset();
}

Status DataFiles::Retire(uint32_t number, uint64_t retire_sequence) {
  std::lock_guard lock(mu_);
  auto it = files_.find(number);
  if (it == files_.end() || it->second->retired) {
    return Status::NotFound(Subject::kNone, fmt::format("data file {}", number));
  }
  if (it->second == active_) {
    return Status::FailedPrecondition(Subject::kNone, "the active data file cannot be retired");
  }
  if (::unlink(it->second->path().c_str()) != 0) {
    return Errno("unlink", it->second->path());
  }
  it->second->retired = true;
  it->second->retire_sequence = retire_sequence;
  dirty_.erase(number);
  return Status::Ok();
}

size_t DataFiles::Release(uint64_t oldest_sequence) {
  std::lock_guard lock(mu_);
  size_t held = 0;
  for (auto it = files_.begin(); it != files_.end();) {
    const File& f = *it->second;
    if (f.retired && (oldest_sequence == 0 || oldest_sequence >= f.retire_sequence)) {
      it = files_.erase(it);  // readers that found it keep it (and its mapping) alive
      continue;
    }
    held += f.retired ? 1 : 0;
    ++it;
  }
  return held;
}

}  // namespace oc::storage
