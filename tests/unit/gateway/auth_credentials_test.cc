// Credentials file load/save and key generation.
#include "auth/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "oc/testutil/testutil.h"

namespace oc::gateway::auth {
namespace {

std::string WriteFile(const testutil::TempDir& dir, std::string_view text) {
  const std::string path = (dir.path() / "credentials.toml").string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Credentials, GeneratedKeysHaveAwsShapesAndDiffer) {
  const User a = Credentials::Generate("a");
  const User b = Credentials::Generate("b");
  EXPECT_EQ(a.name, "a");
  ASSERT_EQ(a.access_key.size(), 20u);
  EXPECT_TRUE(a.access_key.starts_with("OC"));
  EXPECT_TRUE(std::all_of(a.access_key.begin(), a.access_key.end(),
                          [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }));
  ASSERT_EQ(a.secret_key.size(), 40u);
  EXPECT_TRUE(std::all_of(a.secret_key.begin(), a.secret_key.end(),
                          [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }));
  EXPECT_NE(a.access_key, b.access_key);
  EXPECT_NE(a.secret_key, b.secret_key);
  EXPECT_FALSE(a.admin);
}

TEST(Credentials, SaveThenLoadRoundTripsWithMode0600) {
  testutil::TempDir dir;
  User admin = Credentials::Generate("admin");
  admin.admin = true;
  User quoted{"we\"ird\\name", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
              false};
  Result<Credentials> creds = Credentials::FromUsers({admin, quoted});
  ASSERT_TRUE(creds.has_value()) << creds.error();
  const std::string path = (dir.path() / "creds.toml").string();
  ASSERT_TRUE(creds->SaveFile(path).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Result<Credentials> back = Credentials::LoadFile(path);
  ASSERT_TRUE(back.has_value()) << back.error();
  ASSERT_EQ(back->users().size(), 2u);
  const User* a = back->Find(admin.access_key);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "admin");
  EXPECT_EQ(a->secret_key, admin.secret_key);
  EXPECT_TRUE(a->admin);
  const User* q = back->Find("AKIAIOSFODNN7EXAMPLE");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->name, quoted.name);
  EXPECT_EQ(q->secret_key, quoted.secret_key);
  EXPECT_FALSE(q->admin);
  EXPECT_EQ(back->Find("NOPE"), nullptr);

  // Saving over an existing file replaces it and keeps the mode.
  ASSERT_TRUE(Credentials::FromUsers({quoted})->SaveFile(path).ok());
  EXPECT_EQ(Credentials::LoadFile(path)->users().size(), 1u);
}

TEST(Credentials, LoadsTheDocumentedFormat) {
  testutil::TempDir dir;
  const std::string path = WriteFile(dir, R"(
[[user]]
name = "admin"
access_key = "AKIAIOSFODNN7EXAMPLE"
secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
admin = true

[[user]]
name = "reader"
access_key = "READER0001"
secret_key = "readersecret"
)");
  Result<Credentials> c = Credentials::LoadFile(path);
  ASSERT_TRUE(c.has_value()) << c.error();
  ASSERT_EQ(c->users().size(), 2u);
  EXPECT_TRUE(c->users()[0].admin);
  EXPECT_FALSE(c->users()[1].admin);
}

TEST(Credentials, EmptyFileHasNoUsers) {
  testutil::TempDir dir;
  Result<Credentials> c = Credentials::LoadFile(WriteFile(dir, "# nobody yet\n"));
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_TRUE(c->users().empty());
}

TEST(Credentials, RejectsBadFiles) {
  const std::string ok_user =
      "name = \"u\"\naccess_key = \"AKIAIOSFODNN7EXAMPLE\"\nsecret_key = \"secretsecret\"\n";
  struct Row {
    std::string what;
    std::string text;
  };
  const Row rows[] = {
      {"not TOML", "[[user]\nname="},
      {"unknown top-level key", "region = \"x\"\n[[user]]\n" + ok_user},
      {"unknown user key", "[[user]]\n" + ok_user + "role = \"x\"\n"},
      {"user is a table", "[user]\n" + ok_user},
      {"missing secret", "[[user]]\nname = \"u\"\naccess_key = \"AKIAIOSFODNN7EXAMPLE\"\n"},
      {"missing name", "[[user]]\naccess_key = \"AKIA\"\nsecret_key = \"secretsecret\"\n"},
      {"number key", "[[user]]\nname = \"u\"\naccess_key = 12345\nsecret_key = \"secretsecret\"\n"},
      {"admin string", "[[user]]\n" + ok_user + "admin = \"yes\"\n"},
      {"short secret",
       "[[user]]\nname = \"u\"\naccess_key = \"AKIAIOSFODNN7EXAMPLE\"\nsecret_key = \"short\"\n"},
      {"slash in access key",
       "[[user]]\nname = \"u\"\naccess_key = \"AKIA/X\"\nsecret_key = \"secretsecret\"\n"},
      {"space in secret",
       "[[user]]\nname = \"u\"\naccess_key = \"AKIAX\"\nsecret_key = \"secret secret\"\n"},
      {"duplicate access key", "[[user]]\n" + ok_user +
                                   "[[user]]\nname = \"v\"\naccess_key = \"AKIAIOSFODNN7EXAMPLE\"\n"
                                   "secret_key = \"othersecret\"\n"},
      {"duplicate name", "[[user]]\n" + ok_user +
                             "[[user]]\nname = \"u\"\naccess_key = \"AKIAOTHER\"\n"
                             "secret_key = \"othersecret\"\n"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    testutil::TempDir dir;
    Result<Credentials> c = Credentials::LoadFile(WriteFile(dir, row.text));
    ASSERT_FALSE(c.has_value());
    EXPECT_EQ(c.error().code(), Code::kInvalidArgument) << c.error();
  }
}

TEST(Credentials, MissingFileIsNotFound) {
  testutil::TempDir dir;
  Result<Credentials> c = Credentials::LoadFile((dir.path() / "absent.toml").string());
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), Code::kNotFound);
}

TEST(Credentials, SaveIntoMissingDirectoryIsIOError) {
  testutil::TempDir dir;
  Status s = Credentials::FromUsers({Credentials::Generate("x")})
                 ->SaveFile((dir.path() / "no" / "such" / "creds.toml").string());
  EXPECT_EQ(s.code(), Code::kIOError);
}

}  // namespace
}  // namespace oc::gateway::auth
