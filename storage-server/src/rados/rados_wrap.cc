#include "rados/rados_wrap.h"

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "oc/common/check.h"
#include "oc/common/log.h"
#include "oc/storage/no_space.h"

namespace oc::storage::rados {
namespace {

const Logger kLog{"rados"};

std::string Seconds(std::chrono::milliseconds d) {
  // librados takes these options in whole seconds (Validate keeps them at 1 s or more).
  return std::to_string((d.count() + 999) / 1000);
}

}  // namespace

Status FromRados(int rc, std::string_view what) {
  if (rc >= 0) {
    return Status::Ok();
  }
  const int e = -rc;
  std::string message = fmt::format("{}: {} (errno {})", what, std::strerror(e), e);
  switch (e) {
    case ENOENT:
      return Status::NotFound(Subject::kNone, std::move(message));
    case ETIMEDOUT:
    case ESHUTDOWN:
    case ENOTCONN:
    case EAGAIN:
      return Status::Unavailable(std::move(message));
    case ENOSPC:  // the cluster or an OSD is full
    case EDQUOT:  // the pool's quota (ceph osd pool set-quota) is reached
      return NoSpace(std::move(message));
    case EINVAL:
      return Status(Code::kInvalidArgument, Subject::kNone, "", std::move(message));
    default:
      return Status::IOError(std::move(message));
  }
}

int GetXattr(rados_ioctx_t io, const std::string& oid, const char* name, std::string* out) {
  char buf[64];
  const int rc = rados_getxattr(io, oid.c_str(), name, buf, sizeof(buf));
  if (rc >= 0) {
    out->assign(buf, static_cast<size_t>(rc));
  }
  return rc;
}

Result<std::unique_ptr<Cluster>> Cluster::Connect(const RadosOptions& o) {
  std::unique_ptr<Cluster> c(new Cluster());
  int rc = rados_create2(&c->cluster_, "ceph", o.client_name.c_str(), 0);
  if (rc < 0) {
    c->cluster_ = nullptr;
    return FromRados(rc, "creating the librados handle for " + o.client_name);
  }
  rc = rados_conf_read_file(c->cluster_, o.conf_file.empty() ? nullptr : o.conf_file.c_str());
  if (rc < 0) {
    return Status(Code::kNotFound, Subject::kNone, "rados.conf_file",
                  fmt::format("cannot read the Ceph configuration {}: {}",
                              o.conf_file.empty() ? "(librados' default search)" : o.conf_file,
                              std::strerror(-rc)));
  }
  // Ceph's defaults wait forever for an op and 300 s for the monitors: bound both, keep
  // librados' own log off our stderr.
  const std::pair<const char*, std::string> overrides[] = {
      {"rados_osd_op_timeout", Seconds(o.op_timeout)},
      {"rados_mon_op_timeout", Seconds(o.op_timeout)},
      {"client_mount_timeout", Seconds(o.connect_timeout)},
      {"log_to_stderr", "false"},
      {"err_to_stderr", "false"},
      {"log_file", ""},
  };
  for (const auto& [name, value] : overrides) {
    rc = rados_conf_set(c->cluster_, name, value.c_str());
    if (rc < 0) {
      return FromRados(rc, std::string("setting ") + name);
    }
  }
  if (!o.keyring.empty()) {
    rc = rados_conf_set(c->cluster_, "keyring", o.keyring.c_str());
    if (rc < 0) {
      return FromRados(rc, "setting the keyring");
    }
  }
  rc = rados_connect(c->cluster_);
  if (rc < 0) {
    return Status(Code::kUnavailable, Subject::kNone, "rados.conf_file",
                  fmt::format("cannot reach the Ceph cluster of {} as {} within {} ms: {}",
                              o.conf_file.empty() ? "the default ceph.conf" : o.conf_file,
                              o.client_name, o.connect_timeout.count(), std::strerror(-rc)));
  }
  char fsid[64] = {};
  if (rados_cluster_fsid(c->cluster_, fsid, sizeof(fsid) - 1) >= 0) {
    c->fsid_ = fsid;
  }
  rc = rados_ioctx_create(c->cluster_, o.pool.c_str(), &c->io_);
  if (rc == -ENOENT && o.create_pool) {
    rc = rados_pool_create(c->cluster_, o.pool.c_str());
    if (rc < 0 && rc != -EEXIST) {
      return FromRados(rc, "creating pool '" + o.pool + "'");
    }
    // Untagged pools raise a health warning; tag it as ours.
    Result<std::string> tagged = c->MonCommand(fmt::format(
        R"({{"prefix": "osd pool application enable", "pool": "{}", "app": "objectcache"}})",
        o.pool));
    if (!tagged.has_value()) {
      kLog.Warn("pool {} created, but enabling its application failed: {}", o.pool,
                tagged.error().ToString());
    }
    rc = rados_ioctx_create(c->cluster_, o.pool.c_str(), &c->io_);
  }
  if (rc == -ENOENT) {
    c->io_ = nullptr;
    return Status(Code::kNotFound, Subject::kNone, "rados.pool",
                  fmt::format("pool '{}' does not exist in the Ceph cluster {} (create it, or set "
                              "rados.create_pool for a test cluster)",
                              o.pool, c->fsid_));
  }
  if (rc < 0) {
    c->io_ = nullptr;
    return FromRados(rc, "opening pool '" + o.pool + "'");
  }
  rados_ioctx_set_namespace(c->io_, o.rados_namespace.c_str());
  // A full cluster or a pool at its quota: without this librados holds every write until the
  // full flag clears, so a PUT waits op_timeout and fails kUnavailable, and deletes, which
  // would free space, wait too. With it the OSDs answer writes -ENOSPC/-EDQUOT at once
  // (FromRados: the store's "no space", 507 at the gateway) and let deletes through
  // (librados.h, LIBRADOS_OPERATION_FULL_TRY; docs/decisions/full-disk.md).
  rados_set_pool_full_try(c->io_);
  return c;
}

Cluster::~Cluster() {
  if (io_ != nullptr) {
    rados_ioctx_destroy(io_);
  }
  if (cluster_ != nullptr) {
    rados_shutdown(cluster_);
  }
}

std::string Cluster::ConfGet(const char* name) const {
  char buf[256] = {};
  if (rados_conf_get(cluster_, name, buf, sizeof(buf) - 1) < 0) {
    return "";
  }
  return buf;
}

Result<std::string> Cluster::MonCommand(const std::string& json) {
  const char* cmd[] = {json.c_str()};
  char* outbuf = nullptr;
  size_t outlen = 0;
  char* outs = nullptr;
  size_t outslen = 0;
  const int rc = rados_mon_command(cluster_, cmd, 1, "", 0, &outbuf, &outlen, &outs, &outslen);
  std::string out(outbuf != nullptr ? outbuf : "", outbuf != nullptr ? outlen : 0);
  std::string status(outs != nullptr ? outs : "", outs != nullptr ? outslen : 0);
  rados_buffer_free(outbuf);
  rados_buffer_free(outs);
  if (rc < 0) {
    return FromRados(rc, "monitor command " + json + ": " + status);
  }
  return out;
}

Result<std::string> Cluster::Addrs() const {
  char* addrs = nullptr;
  const int rc = rados_getaddrs(cluster_, &addrs);
  if (rc < 0) {
    return FromRados(rc, "reading the session's addresses");
  }
  std::string out(addrs != nullptr ? addrs : "");
  rados_buffer_free(addrs);
  return out;
}

Status Cluster::Blocklist(const std::string& addrs, uint32_t seconds) {
  std::string copy = addrs;  // the C API takes a non-const char*
  return FromRados(rados_blocklist_add(cluster_, copy.data(), seconds), "blocklisting " + addrs);
}

Completion::Completion() {
  const int rc = rados_aio_create_completion2(nullptr, nullptr, &c_);
  OC_CHECK(rc == 0);
}

Completion::~Completion() {
  if (c_ != nullptr) {
    rados_aio_release(c_);
  }
}

int Completion::Wait() {
  rados_aio_wait_for_complete(c_);
  return rados_aio_get_return_value(c_);
}

void WriteOp::CmpXattr(const char* name, std::string_view value) {
  rados_write_op_cmpxattr(op_, name, LIBRADOS_CMPXATTR_OP_EQ, value.data(), value.size());
}

void WriteOp::OmapCmp(std::string_view key, std::string_view value, int* prval) {
  rados_write_op_omap_cmp2(op_, key.data(), LIBRADOS_CMPXATTR_OP_EQ, value.data(), key.size(),
                           value.size(), prval);
}

void WriteOp::OmapSet(const std::vector<std::pair<std::string, std::string>>& pairs) {
  if (pairs.empty()) {
    return;
  }
  std::vector<const char*> keys;
  std::vector<const char*> vals;
  std::vector<size_t> key_lens;
  std::vector<size_t> val_lens;
  for (const auto& [k, v] : pairs) {
    keys.push_back(k.data());
    vals.push_back(v.data());
    key_lens.push_back(k.size());
    val_lens.push_back(v.size());
  }
  rados_write_op_omap_set2(op_, keys.data(), vals.data(), key_lens.data(), val_lens.data(),
                           pairs.size());
}

void WriteOp::OmapRm(const std::vector<std::string>& keys) {
  if (keys.empty()) {
    return;
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& k : keys) {
    ptrs.push_back(k.data());
    lens.push_back(k.size());
  }
  rados_write_op_omap_rm_keys2(op_, ptrs.data(), lens.data(), keys.size());
}

void WriteOp::SetXattr(const char* name, std::string_view value) {
  rados_write_op_setxattr(op_, name, value.data(), value.size());
}

void WriteOp::Create(bool exclusive) {
  rados_write_op_create(op_, exclusive ? LIBRADOS_CREATE_EXCLUSIVE : LIBRADOS_CREATE_IDEMPOTENT,
                        nullptr);
}

void WriteOp::WriteFull(std::string_view bytes) {
  rados_write_op_write_full(op_, bytes.data(), bytes.size());
}

void WriteOp::Write(std::string_view bytes, uint64_t offset) {
  rados_write_op_write(op_, bytes.data(), bytes.size(), offset);
}

void WriteOp::Remove() { rados_write_op_remove(op_); }

int WriteOp::Operate(rados_ioctx_t io, const std::string& oid) {
  return rados_write_op_operate2(op_, io, oid.c_str(), nullptr, 0);
}

int WriteOp::OperateAsync(rados_ioctx_t io, const std::string& oid, Completion& c) {
  return rados_aio_write_op_operate(op_, io, c.get(), oid.c_str(), nullptr, 0);
}

bool OmapIter::Next(std::string_view* key, std::string_view* value) {
  if (it_ == nullptr) {
    return false;
  }
  char* k = nullptr;
  char* v = nullptr;
  size_t klen = 0;
  size_t vlen = 0;
  if (rados_omap_get_next2(it_, &k, &v, &klen, &vlen) < 0 || k == nullptr) {
    return false;
  }
  *key = std::string_view(k, klen);
  *value = std::string_view(v != nullptr ? v : "", v != nullptr ? vlen : 0);
  return true;
}

bool XattrIter::Next(std::string_view* name, std::string_view* value) {
  if (it_ == nullptr) {
    return false;
  }
  const char* n = nullptr;
  const char* v = nullptr;
  size_t vlen = 0;
  if (rados_getxattrs_next(it_, &n, &v, &vlen) < 0 || n == nullptr) {
    return false;
  }
  *name = std::string_view(n);
  *value = std::string_view(v != nullptr ? v : "", v != nullptr ? vlen : 0);
  return true;
}

void ReadOp::OmapGetByKeys(const std::vector<std::string>& keys, OmapIter* it, int* prval) {
  key_ptrs_.clear();
  key_lens_.clear();
  for (const std::string& k : keys) {
    key_ptrs_.push_back(k.data());
    key_lens_.push_back(k.size());
  }
  rados_read_op_omap_get_vals_by_keys2(op_, key_ptrs_.data(), keys.size(), key_lens_.data(),
                                       it->slot(), prval);
}

void ReadOp::OmapGetVals(const std::string& start_after, const std::string& prefix, uint64_t max,
                         OmapIter* it, unsigned char* more, int* prval) {
  rados_read_op_omap_get_vals2(op_, start_after.c_str(), prefix.c_str(), max, it->slot(), more,
                               prval);
}

void ReadOp::Read(uint64_t offset, size_t length, char* dest, size_t* bytes_read, int* prval) {
  rados_read_op_read(op_, offset, length, dest, bytes_read, prval);
}

void ReadOp::GetXattrs(XattrIter* it, int* prval) {
  rados_read_op_getxattrs(op_, it->slot(), prval);
}

int ReadOp::Operate(rados_ioctx_t io, const std::string& oid) {
  return rados_read_op_operate(op_, io, oid.c_str(), 0);
}

int ReadOp::OperateAsync(rados_ioctx_t io, const std::string& oid, Completion& c) {
  return rados_aio_read_op_operate(op_, io, c.get(), oid.c_str(), 0);
}

}  // namespace oc::storage::rados
