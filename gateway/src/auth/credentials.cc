#include "auth/credentials.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "oc/common/check.h"

namespace oc::gateway::auth {
namespace {

constexpr size_t kMinAccessKey = 3;
constexpr size_t kMaxAccessKey = 128;
constexpr size_t kMinSecretKey = 8;
constexpr size_t kMaxSecretKey = 256;
constexpr size_t kMaxUserName = 64;
constexpr size_t kGeneratedAccessKey = 20;
constexpr size_t kGeneratedSecretKey = 40;

bool IsAccessKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}
bool IsPrintable(char c) { return c > ' ' && c < 0x7f; }

Status CheckUser(const User& u) {
  if (u.name.empty() || u.name.size() > kMaxUserName ||
      !std::all_of(u.name.begin(), u.name.end(), IsPrintable)) {
    return Status::InvalidArgument("user", "user name must be 1..64 printable characters");
  }
  if (u.access_key.size() < kMinAccessKey || u.access_key.size() > kMaxAccessKey ||
      !std::all_of(u.access_key.begin(), u.access_key.end(), IsAccessKeyChar)) {
    return Status::InvalidArgument(
        "user", "access_key of user '" + u.name + "' must be 3..128 of [A-Za-z0-9._-]");
  }
  if (u.secret_key.size() < kMinSecretKey || u.secret_key.size() > kMaxSecretKey ||
      !std::all_of(u.secret_key.begin(), u.secret_key.end(), IsPrintable)) {
    return Status::InvalidArgument(
        "user", "secret_key of user '" + u.name + "' must be 8..256 printable characters");
  }
  return Status::Ok();
}

// `n` characters drawn uniformly from `alphabet` (rejection sampling: no modulo bias).
std::string RandomString(std::string_view alphabet, size_t n) {
  const size_t limit = 256 - 256 % alphabet.size();
  std::string out;
  unsigned char buf[64];
  while (out.size() < n) {
    OC_CHECK(RAND_bytes(buf, sizeof(buf)) == 1);
    for (unsigned char b : buf) {
      if (b < limit && out.size() < n) {
        out.push_back(alphabet[b % alphabet.size()]);
      }
    }
  }
  return out;
}

Status ReadString(const toml::table& t, std::string_view key, std::string* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr || !node->is_string()) {
    return Status::InvalidArgument("user",
                                   "every [[user]] needs a string '" + std::string(key) + "'");
  }
  *out = node->as_string()->get();
  return Status::Ok();
}

}  // namespace

Result<Credentials> Credentials::FromUsers(std::vector<User> users) {
  for (size_t i = 0; i < users.size(); ++i) {
    OC_RETURN_IF_ERROR(CheckUser(users[i]));
    for (size_t j = 0; j < i; ++j) {
      if (users[j].name == users[i].name) {
        return Status::InvalidArgument("user", "duplicate user name '" + users[i].name + "'");
      }
      if (users[j].access_key == users[i].access_key) {
        return Status::InvalidArgument("user",
                                       "duplicate access_key for user '" + users[i].name + "'");
      }
    }
  }
  Credentials c;
  c.users_ = std::move(users);
  return c;
}

Result<Credentials> Credentials::LoadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(Subject::kNone, "credentials file " + path + " does not exist");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IOError("cannot read credentials file " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root;
  // Debian's toml++ throws on a parse error; this runs once at startup, off the data path.
  try {
    root = toml::parse(text.str(), path);
  } catch (const toml::parse_error& err) {
    return Status::InvalidArgument(path, "TOML error at line " +
                                             std::to_string(err.source().begin.line) + ": " +
                                             std::string(err.description()));
  }
  std::vector<User> users;
  for (const auto& [key, node] : root) {
    if (key.str() != "user") {
      return Status::InvalidArgument(std::string(key.str()),
                                     "unknown key in credentials file " + path);
    }
    const toml::array* arr = node.as_array();
    if (arr == nullptr || !arr->is_array_of_tables()) {
      return Status::InvalidArgument("user", "'user' must be an array of tables ([[user]])");
    }
    for (const toml::node& item : *arr) {
      const toml::table& t = *item.as_table();
      User u;
      OC_RETURN_IF_ERROR(ReadString(t, "name", &u.name));
      OC_RETURN_IF_ERROR(ReadString(t, "access_key", &u.access_key));
      OC_RETURN_IF_ERROR(ReadString(t, "secret_key", &u.secret_key));
      if (const toml::node* admin = t.get("admin")) {
        if (!admin->is_boolean()) {
          return Status::InvalidArgument("user", "'admin' must be true or false");
        }
        u.admin = admin->as_boolean()->get();
      }
      for (const auto& [k, v] : t) {
        const std::string_view name = k.str();
        if (name != "name" && name != "access_key" && name != "secret_key" && name != "admin") {
          return Status::InvalidArgument(std::string(name), "unknown key in [[user]] of " + path);
        }
      }
      users.push_back(std::move(u));
    }
  }
  return FromUsers(std::move(users));
}

Status Credentials::SaveFile(const std::string& path) const {
  toml::array arr;
  for (const User& u : users_) {
    arr.push_back(toml::table{{"name", u.name},
                              {"access_key", u.access_key},
                              {"secret_key", u.secret_key},
                              {"admin", u.admin}});
  }
  std::ostringstream text;
  text << "# ObjectCache gateway users (SigV4 key pairs). Keep this file private (mode 0600).\n";
  text << toml::table{{"user", std::move(arr)}} << "\n";
  const std::string body = text.str();

  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IOError("cannot create " + tmp + ": " + std::strerror(errno));
  }
  bool ok = ::fchmod(fd, 0600) == 0;
  size_t done = 0;
  while (ok && done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    ok = n > 0;
    done += ok ? static_cast<size_t>(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved_errno);
    ::unlink(tmp.c_str());
    return Status::IOError("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

User Credentials::Generate(std::string name) {
  User u;
  u.name = std::move(name);
  u.access_key =
      "OC" + RandomString("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", kGeneratedAccessKey - 2);
  u.secret_key = RandomString("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                              kGeneratedSecretKey);
  return u;
}

const User* Credentials::Find(std::string_view access_key) const {
  for (const User& u : users_) {
    if (u.access_key == access_key) {
      return &u;
    }
  }
  return nullptr;
}

}  // namespace oc::gateway::auth
