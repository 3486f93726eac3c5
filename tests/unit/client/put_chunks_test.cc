// Descriptor PUTs whose answer comes early, against a real gateway in process
// (gateway_fixture.h): the gateway refuses a PUT from its headers (no such bucket, an anonymous
// or badly signed caller) and closes after draining at most max_drain_bytes, while the client is
// still writing a body far larger than that and than both sockets' buffers. The client must
// read that answer and return it with its S3 code (issue 33), not the write's broken pipe; and
// the client must stay usable afterwards (the connection is dropped, not pooled).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gateway_fixture.h"
#include "oc/client/client.h"
#include "oc/client/errors.h"
#include "oc/descriptor/descriptor.h"
#include "oc/testutil/testutil.h"

namespace oc::client {
namespace {

using descriptor::Descriptor;
using descriptor::StoredLayout;

// 32 chunks of 32 layers x 64 KiB: a 64 MiB body, 64x the gateway's default max_drain_bytes
// and several times what loopback socket buffers absorb, so the gateway closes mid-body.
constexpr uint32_t kBigChunks = 32;
constexpr uint32_t kBigLayers = 32;
constexpr uint64_t kBigLayerBytes = 64 << 10;

Descriptor Big() {
  Descriptor d;
  descriptor::ExplicitKeys keys;
  for (uint32_t j = 0; j < kBigChunks; ++j) {
    keys.names.push_back("early/chunk-" + std::to_string(j));
  }
  d.keys = std::move(keys);
  d.num_layers = kBigLayers;
  d.chunk_tokens = 16;
  d.layer_bytes = kBigLayerBytes;
  d.layout = StoredLayout::kL2TD;
  return d;
}

std::vector<std::byte> BigBody() {
  return testutil::PatternBytes(3, uint64_t{kBigChunks} * kBigLayers * kBigLayerBytes);
}

// The answer's S3 code and HTTP status, or what the failure was instead.
void ExpectAnswer(const Result<PutChunksResult>& r, const char* s3_code, unsigned http_status) {
  ASSERT_FALSE(r.has_value());
  const ErrorInfo* info = ErrorInfoOf(r.error());
  ASSERT_NE(info, nullptr) << "no answer read: " << r.error();
  EXPECT_EQ(info->s3_code, s3_code) << r.error();
  EXPECT_EQ(info->http_status, http_status) << r.error();
  EXPECT_EQ(info->request_id.size(), 16u) << r.error();
}

TEST_F(GatewayFixture, AnEarlyAnswerToALargePutIsReadAndReported) {
  const std::vector<std::byte> body = BigBody();
  struct Row {
    const char* what;
    std::string bucket;
    std::string access_key, secret_key;  // "" "": the fixture's own client
    const char* s3_code;
    unsigned http_status;
    Code code;
  };
  const Row rows[] = {
      {"missing bucket", "no-such-bucket", "", "", "NoSuchBucket", 404, Code::kNotFound},
      {"anonymous caller", kBucket, "-", "", "AccessDenied", 403, Code::kPermissionDenied},
      {"wrong secret", kBucket, client_->options().access_key, "wrong-secret-wrong-secret",
       "SignatureDoesNotMatch", 403, Code::kUnauthenticated},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    std::unique_ptr<Client> other;
    Client* c = client_.get();
    if (!row.access_key.empty()) {
      other = ClientWith(row.access_key == "-" ? "" : row.access_key, row.secret_key);
      ASSERT_NE(other, nullptr);
      c = other.get();
    }
    const Result<PutChunksResult> r = c->PutChunks(row.bucket, Big(), body);
    ExpectAnswer(r, row.s3_code, row.http_status);
    if (!r.has_value()) {
      EXPECT_EQ(r.error().code(), row.code) << r.error();
    }
  }
  // The early answer's connection was dropped: the next PUT goes through on a sound one, and
  // nothing of the refused ones was stored.
  const Result<PutChunksResult> ok = client_->PutChunks(kBucket, Big(), body);
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->chunks, kBigChunks);
  Result<std::string> back = client_->GetObjectBytes(kBucket, "early/chunk-31");
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->size(), uint64_t{kBigLayers} * kBigLayerBytes);
}

// A small body the gateway drains whole keeps its connection, and the answer is the same.
TEST_F(GatewayFixture, AnEarlyAnswerToASmallPutIsTheSameError) {
  const Descriptor d = Toy(StoredLayout::kL2TD);
  const std::vector<std::byte> chunks = testutil::PatternBytes(5, 2 * kLayers * kLayerBytes);
  ExpectAnswer(client_->PutChunks("no-such-bucket", d, chunks), "NoSuchBucket", 404);
  ASSERT_TRUE(client_->PutChunks(kBucket, d, chunks).has_value());
}

}  // namespace
}  // namespace oc::client
