// URI helpers and the crypto wrappers.
#include "auth/uri.h"

#include <gtest/gtest.h>

#include <string>

#include "auth/crypto.h"

namespace oc::gateway::auth {
namespace {

TEST(Uri, EncodesAllButUnreservedWithUppercaseHex) {
  EXPECT_EQ(UriEncode("AZaz09-._~", true), "AZaz09-._~");
  EXPECT_EQ(UriEncode("a b/c+d*e", true), "a%20b%2Fc%2Bd%2Ae");
  EXPECT_EQ(UriEncode("a b/c+d*e", false), "a%20b/c%2Bd%2Ae");
  EXPECT_EQ(UriEncode("\xe2\x82\xac", true), "%E2%82%AC");
  EXPECT_EQ(UriEncode(std::string("\0\xff", 2), true), "%00%FF");
}

TEST(Uri, DecodesStrictly) {
  EXPECT_EQ(PercentDecode("a%20b%2fc+d"), "a b/c+d");
  EXPECT_EQ(PercentDecode("%E2%82%ac"), "\xe2\x82\xac");
  EXPECT_EQ(PercentDecode(""), "");
  for (std::string_view bad : {"%", "%2", "a%g0", "%0g", "%%41"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(PercentDecode(bad).has_value());
  }
}

TEST(Uri, RoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) {
    all.push_back(static_cast<char>(c));
  }
  EXPECT_EQ(PercentDecode(UriEncode(all, true)), all);
  EXPECT_EQ(PercentDecode(UriEncode(all, false)), all);
}

TEST(Uri, ParsesTargets) {
  Result<ParsedTarget> t = ParseTarget("/my%20bucket/a%2Fb/c?list-type=2&prefix=a%2Fb&&delimiter");
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t->raw_path, "/my%20bucket/a%2Fb/c");
  EXPECT_EQ(t->raw_query, "list-type=2&prefix=a%2Fb&&delimiter");
  EXPECT_EQ(t->path, "/my bucket/a/b/c");
  ASSERT_EQ(t->query.size(), 3u);
  EXPECT_EQ(t->query[0], (std::pair<std::string, std::string>{"list-type", "2"}));
  EXPECT_EQ(t->query[1], (std::pair<std::string, std::string>{"prefix", "a/b"}));
  EXPECT_EQ(t->query[2], (std::pair<std::string, std::string>{"delimiter", ""}));

  Result<ParsedTarget> bare = ParseTarget("/");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->path, "/");
  EXPECT_TRUE(bare->query.empty());

  for (std::string_view bad : {"", "bucket/key", "http://host/x", "/a%zz", "/a?b=%"}) {
    SCOPED_TRACE(bad);
    Result<ParsedTarget> r = ParseTarget(bad);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), "request-target");
  }
}

TEST(Crypto, Sha256KnownAnswersAndIncrementalUpdates) {
  EXPECT_EQ(Sha256Hex(""), kEmptySha256Hex);
  // FIPS 180-2 appendix B.1.
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("");
  h.Update("bc");
  EXPECT_EQ(DigestHex(h.Finish()), Sha256Hex("abc"));
  h.Reset();
  h.Update("abc");
  EXPECT_EQ(DigestHex(h.Finish()), Sha256Hex("abc"));
  Sha256 moved = std::move(h);
  moved.Reset();
  EXPECT_EQ(DigestHex(moved.Finish()), kEmptySha256Hex);
}

TEST(Crypto, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(DigestHex(HmacSha256(std::string_view("Jefe"), "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Crypto, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
}

}  // namespace
}  // namespace oc::gateway::auth
