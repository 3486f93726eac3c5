#pragma once
// A small RAII wrapper over librados' C API (rados/librados.h): the one place that names
// librados types, and the one translation of its errors (FromRados). RadosStore uses only
// this. The C API is librados.so.2's stable ABI; it copies read data straight into buffers we
// own and never throws (docs/decisions/rados-backend.md).
//
//   Cluster     one rados_t (connected, op timeouts overridden) plus its io context of the
//               store's pool and namespace; a store opens [rados] cluster_handles of them
//   WriteOp     rados_write_op_t: compound writes, atomic on one object
//   ReadOp      rados_read_op_t: compound reads of one object
//   Completion  an aio completion; Wait() returns the op's result
//   OmapIter    an omap iterator filled by a read op
//   XattrIter   an xattr iterator filled by a read op
//
// Buffers handed to a read op (destinations, prval and byte-count slots) must outlive its
// completion; values handed to a write op are copied when added.
// Thread safety: Cluster may be used from any thread; an op, completion or iterator by one
// thread at a time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rados/librados.h>

#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/options.h"

namespace oc::storage::rados {

// The one translation of librados errors (negative errno) into Status: ENOENT -> kNotFound,
// ETIMEDOUT/ESHUTDOWN/ENOTCONN -> kUnavailable, ENOSPC/EDQUOT -> kResourceExhausted,
// EINVAL -> kInvalidArgument, else kIOError. `what` says which call failed.
Status FromRados(int rc, std::string_view what);

// Reads xattr `name` of `oid` into *out; the librados result (negative errno on failure).
int GetXattr(rados_ioctx_t io, const std::string& oid, const char* name, std::string* out);

class Cluster {
 public:
  // Creates the handle as `options.client_name`, reads options.conf_file (or librados' own
  // search), sets the keyring, overrides the timeouts (op_timeout for OSD and monitor ops,
  // connect_timeout for the mount), connects, and opens the pool (creating it when
  // create_pool) in options.rados_namespace. Errors name what is missing: the conf file, the
  // cluster ("cannot reach the Ceph cluster ... within connect_timeout"), the pool ("pool 'x'
  // does not exist").
  static Result<std::unique_ptr<Cluster>> Connect(const RadosOptions& options);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  rados_ioctx_t io() const { return io_; }
  const std::string& fsid() const { return fsid_; }
  // A librados config value as the cluster handle sees it ("" if unknown).
  std::string ConfGet(const char* name) const;
  // Runs a monitor command (JSON); its output, or the error with the monitor's message.
  Result<std::string> MonCommand(const std::string& json);
  // This handle's session addresses, as `Blocklist` takes them (rados_getaddrs).
  Result<std::string> Addrs() const;
  // Blocklists a session (another handle's Addrs()) for `seconds`: the OSDs then refuse its
  // ops (-EBLOCKLISTED, which is -ESHUTDOWN). For tests of a handle that dies.
  Status Blocklist(const std::string& addrs, uint32_t seconds);

 private:
  Cluster() = default;
  rados_t cluster_ = nullptr;
  rados_ioctx_t io_ = nullptr;
  std::string fsid_;
};

class Completion {
 public:
  Completion();
  ~Completion();
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  Completion(Completion&& other) noexcept : c_(std::exchange(other.c_, nullptr)) {}
  Completion& operator=(Completion&& other) noexcept {
    if (this != &other) {
      if (c_ != nullptr) {
        rados_aio_release(c_);
      }
      c_ = std::exchange(other.c_, nullptr);
    }
    return *this;
  }

  rados_completion_t get() const { return c_; }
  // Waits for the op; returns its result (>= 0 success, negative errno).
  int Wait();

 private:
  rados_completion_t c_ = nullptr;
};

class WriteOp {
 public:
  WriteOp() : op_(rados_create_write_op()) {}
  ~WriteOp() { rados_release_write_op(op_); }
  WriteOp(const WriteOp&) = delete;
  WriteOp& operator=(const WriteOp&) = delete;

  rados_write_op_t get() const { return op_; }
  // Fails the whole op with -ECANCELED unless xattr `name` equals `value`
  // (-ENOENT/-ENODATA when the object or the xattr is absent).
  void CmpXattr(const char* name, std::string_view value);
  // Fails the whole op with -ECANCELED unless omap `key` holds `value`; an absent key
  // compares as empty, so "" asserts absence.
  void OmapCmp(std::string_view key, std::string_view value, int* prval);
  void OmapSet(const std::vector<std::pair<std::string, std::string>>& pairs);
  void OmapRm(const std::vector<std::string>& keys);
  void SetXattr(const char* name, std::string_view value);
  void Create(bool exclusive);
  void WriteFull(std::string_view bytes);
  void Write(std::string_view bytes, uint64_t offset);
  void Remove();

  // Runs the op synchronously; the librados result (0 or negative errno).
  int Operate(rados_ioctx_t io, const std::string& oid);
  // Starts the op; `c` completes once it is committed on every replica.
  int OperateAsync(rados_ioctx_t io, const std::string& oid, Completion& c);

 private:
  rados_write_op_t op_;
};

class OmapIter {
 public:
  OmapIter() = default;
  ~OmapIter() {
    if (it_ != nullptr) {
      rados_omap_get_end(it_);
    }
  }
  OmapIter(const OmapIter&) = delete;
  OmapIter& operator=(const OmapIter&) = delete;

  rados_omap_iter_t* slot() { return &it_; }
  // The next (key, value); false at the end. The views are valid until the iterator dies.
  bool Next(std::string_view* key, std::string_view* value);

 private:
  rados_omap_iter_t it_ = nullptr;
};

class XattrIter {
 public:
  XattrIter() = default;
  ~XattrIter() {
    if (it_ != nullptr) {
      rados_getxattrs_end(it_);
    }
  }
  XattrIter(const XattrIter&) = delete;
  XattrIter& operator=(const XattrIter&) = delete;

  rados_xattrs_iter_t* slot() { return &it_; }
  // The next (name, value); false at the end. The views are valid until the iterator dies.
  bool Next(std::string_view* name, std::string_view* value);

 private:
  rados_xattrs_iter_t it_ = nullptr;
};

class ReadOp {
 public:
  ReadOp() : op_(rados_create_read_op()) {}
  ~ReadOp() { rados_release_read_op(op_); }
  ReadOp(const ReadOp&) = delete;
  ReadOp& operator=(const ReadOp&) = delete;

  rados_read_op_t get() const { return op_; }
  // The values of `keys` that exist (keys must stay alive until the op completes).
  void OmapGetByKeys(const std::vector<std::string>& keys, OmapIter* it, int* prval);
  // Up to `max` pairs after `start_after` whose keys start with `prefix`, sorted; *more tells
  // whether more remain. Neither string may hold NUL.
  void OmapGetVals(const std::string& start_after, const std::string& prefix, uint64_t max,
                   OmapIter* it, unsigned char* more, int* prval);
  void Read(uint64_t offset, size_t length, char* dest, size_t* bytes_read, int* prval);
  // Every xattr of the object.
  void GetXattrs(XattrIter* it, int* prval);

  int Operate(rados_ioctx_t io, const std::string& oid);
  int OperateAsync(rados_ioctx_t io, const std::string& oid, Completion& c);

 private:
  rados_read_op_t op_;
  std::vector<const char*> key_ptrs_;
  std::vector<size_t> key_lens_;
};

}  // namespace oc::storage::rados
