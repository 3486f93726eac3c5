// The request head (gateway/src/request_parser.h): the session's Beast parser refuses fields
// Beast cannot store instead of throwing, and PrepareRequest routes the parsed header and
// refuses object keys that are not UTF-8 (or hold NUL), on every operation that names one.
#include "request_parser.h"

#include <gtest/gtest.h>

#include <string>

#include <boost/beast/http/error.hpp>

namespace oc::gateway {
namespace {

namespace http = boost::beast::http;

constexpr uint64_t kRaisedHeaderLimit = 256 << 10;  // a deployment's raised limit
constexpr uint64_t kBodyLimit = 1 << 20;

// Feeds the whole of `raw` to `parser`, as the session's reads would; the parser's error.
boost::beast::error_code Feed(RequestParser& parser, std::string_view raw) {
  boost::beast::error_code ec;
  while (!raw.empty() && !parser.is_header_done()) {
    const size_t n = parser.put(boost::asio::buffer(raw.data(), raw.size()), ec);
    if (ec) {
      return ec;
    }
    raw.remove_prefix(n);
  }
  return ec;
}

TEST(RequestParser, FieldLongerThanBeastCanStoreIsRefusedNotThrown) {
  struct Row {
    std::string name;
    size_t value_bytes;
    bool accepted;
  };
  for (const Row& row : {
           Row{"x-oc-chunk-names", kMaxHeaderFieldBytes, true},
           Row{"x-oc-chunk-names", kMaxHeaderFieldBytes + 1, false},
           Row{"x-oc-chunk-names", 70000, false},
           Row{"x-amz-meta-" + std::string(70000, 'n'), 1, false},  // the name too
       }) {
    SCOPED_TRACE(row.name.substr(0, 20) + " " + std::to_string(row.value_bytes));
    RequestParser parser(kRaisedHeaderLimit, kBodyLimit);
    const std::string raw = "GET /b/k HTTP/1.1\r\nHost: h\r\n" + row.name + ": " +
                            std::string(row.value_bytes, 'a') + "\r\n\r\n";
    boost::beast::error_code ec;
    EXPECT_NO_THROW(ec = Feed(parser, raw));
    if (row.accepted) {
      EXPECT_FALSE(ec) << ec.message();
      EXPECT_TRUE(parser.is_header_done());
      EXPECT_EQ(parser.get()[row.name].size(), row.value_bytes);
      EXPECT_TRUE(parser.oversized_field().empty());
    } else {
      EXPECT_EQ(ec, http::error::header_limit);
      EXPECT_EQ(parser.oversized_field(), row.name.substr(0, 64));
    }
  }
}

TEST(RequestParser, HeaderBlockOverTheLimitIsHeaderLimit) {
  RequestParser parser(/*header_limit=*/1024, kBodyLimit);
  const std::string raw = "GET /b/k HTTP/1.1\r\nx-a: " + std::string(2000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Feed(parser, raw), http::error::header_limit);
  EXPECT_TRUE(parser.oversized_field().empty());  // the block, not one field
}

// Parses `raw` and prepares the request; the error response, if any.
std::optional<Response> Prepare(std::string_view raw, Request* req, RequestParser* parser) {
  boost::beast::error_code ec = Feed(*parser, raw);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser->is_header_done());
  return PrepareRequest(*parser, "", req);
}

TEST(PrepareRequest, RoutesAndDecodesTheTarget) {
  RequestParser parser(kRaisedHeaderLimit, kBodyLimit);
  Request req;
  std::optional<Response> bad = Prepare(
      "PUT /bkt/a%20b/%E2%82%AC%01?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
      "X-Amz-Meta-A: v\r\n\r\n",
      &req, &parser);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.route.op, S3Op::kPutObject);
  EXPECT_EQ(req.route.bucket, "bkt");
  EXPECT_EQ(req.route.key, "a b/\xE2\x82\xAC\x01");  // a control character is a valid key
  EXPECT_EQ(req.content_length, std::optional<uint64_t>(3));
  EXPECT_EQ(req.Header("x-amz-meta-a"), std::optional<std::string_view>("v"));
  EXPECT_EQ(req.Query("x"), std::optional<std::string_view>("1"));
}

TEST(PrepareRequest, RefusesKeysNotUtf8OrWithNulOnEveryOperation) {
  struct Row {
    std::string_view request_line;
    std::string_view encoded_key;
  };
  for (const Row& row : {
           Row{"PUT /b/k%FF HTTP/1.1", "k%FF"},
           Row{"PUT /b/k%ED%A0%80 HTTP/1.1", "k%ED%A0%80"},  // U+D800
           Row{"PUT /b/k%ED%BF%BF HTTP/1.1", "k%ED%BF%BF"},  // U+DFFF
           Row{"PUT /b/%C0%AF HTTP/1.1", "%C0%AF"},          // overlong '/'
           Row{"PUT /b/%F4%90%80%80 HTTP/1.1", "%F4%90%80%80"},
           Row{"PUT /b/a/%E2%82 HTTP/1.1", "a/%E2%82"},  // truncated
           Row{"PUT /b/nul%00 HTTP/1.1", "nul%00"},      // NUL: the store reserves it
           Row{"GET /b/k%FF HTTP/1.1", "k%FF"},
           Row{"HEAD /b/k%FF HTTP/1.1", "k%FF"},
           Row{"DELETE /b/k%FF HTTP/1.1", "k%FF"},
           Row{"POST /b/k%FF?uploads HTTP/1.1", "k%FF"},
           Row{"PUT /b/k%FF?partNumber=1&uploadId=u HTTP/1.1", "k%FF"},
       }) {
    SCOPED_TRACE(row.request_line);
    RequestParser parser(kRaisedHeaderLimit, kBodyLimit);
    Request req;
    std::optional<Response> bad = Prepare(
        std::string(row.request_line) + "\r\nHost: h\r\nContent-Length: 0\r\n\r\n", &req, &parser);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->status, 400u);
    EXPECT_EQ(bad->error, std::optional<S3Error>(S3Error::kInvalidArgument));
    EXPECT_EQ(bad->error_field, "key");
    EXPECT_EQ(bad->error_value, row.encoded_key);
  }
}

TEST(PrepareRequest, MalformedTargetIsInvalidRequest) {
  for (std::string_view line :
       {"GET bkt HTTP/1.1", "GET /b/%zz HTTP/1.1", "GET /b/k?a=%4 HTTP/1.1"}) {
    SCOPED_TRACE(line);
    RequestParser parser(kRaisedHeaderLimit, kBodyLimit);
    Request req;
    std::optional<Response> bad = Prepare(std::string(line) + "\r\nHost: h\r\n\r\n", &req, &parser);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->error, std::optional<S3Error>(S3Error::kInvalidRequest));
  }
}

}  // namespace
}  // namespace oc::gateway
