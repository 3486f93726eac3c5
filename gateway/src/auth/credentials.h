#pragma once
// Credentials: the gateway's users and their SigV4 key pairs, loaded once at start from a
// TOML file and immutable afterwards, so every I/O thread may read them without locks.
//
// File format (TOML, read with toml++), one table per user:
//   [[user]]
//   name = "admin"                                        # unique, non-empty
//   access_key = "AKIAIOSFODNN7EXAMPLE"                   # unique, 3..128 chars [A-Za-z0-9]
//   secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # 8..256 printable ASCII chars
//   admin = true                                          # optional; Default: false
// Unknown keys are an error, as for every config file of ours.
//
// Thread safety: const methods may be called concurrently. Pointers returned by Find stay
// valid as long as the Credentials object lives and is not moved from or assigned to.

#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::gateway::auth {

struct User {
  std::string name;
  std::string access_key;
  std::string secret_key;
  bool admin = false;  // may touch every bucket and user; Default: false
};

class Credentials {
 public:
  Credentials() = default;

  // Builds a set from `users`. kInvalidArgument (field "user") naming the first user with an
  // empty or duplicate name or access key, or a key outside the shapes documented above.
  static Result<Credentials> FromUsers(std::vector<User> users);
  // Reads the file at `path`. kNotFound if it does not exist, kIOError if it cannot be read,
  // kInvalidArgument on a TOML error, an unknown key or a user rejected as in FromUsers.
  static Result<Credentials> LoadFile(const std::string& path);
  // Writes all users to `path` with mode 0600 (written to a temporary file, then renamed).
  // kIOError on failure.
  Status SaveFile(const std::string& path) const;

  // A new user with random keys (OpenSSL RAND_bytes) in AWS's shapes: a 20-char access key of
  // uppercase letters and digits starting "OC", a 40-char secret of letters and digits.
  static User Generate(std::string name);

  // The user whose access key is `access_key`, or nullptr.
  const User* Find(std::string_view access_key) const;
  const std::vector<User>& users() const { return users_; }

 private:
  std::vector<User> users_;  // few users: a linear scan beats a map's allocations
};

}  // namespace oc::gateway::auth
