// LayerHandle against a real gateway over a local store, in process (oc_gateway's Server,
// OpenStore, liboc_client over loopback and UCX on TCP): the HTTP answer of a descriptor
// GET ends the data-plane wait when it is an error (the exchange fails the Delivery itself,
// so a waiter wakes on one condition), and GetLayers runs on the client's bounded request
// executor.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gateway_fixture.h"
#include "oc/client/client.h"
#include "oc/descriptor/descriptor.h"
#include "oc/testutil/testutil.h"

namespace oc::client {
namespace {

using descriptor::Descriptor;
using descriptor::StoredLayout;

TEST_F(GatewayFixture, AnHttpErrorAnswerEndsTheDataPlaneWait) {
  const Descriptor stored = Toy(StoredLayout::kL2TD);
  const std::vector<std::byte> chunks = testutil::PatternBytes(7, 2 * kLayers * kLayerBytes);
  ASSERT_TRUE(client_->PutChunks(kBucket, stored, chunks).has_value());
  auto plane = client_->data_plane();
  ASSERT_TRUE(plane.has_value()) << plane.error();
  auto buffer = (*plane)->Allocate(chunks.size());
  ASSERT_TRUE(buffer.has_value()) << buffer.error();

  // The same chunks asked for in the other layout: the gateway refuses the plan (400 naming
  // x-oc-layout) before any byte moves, so no data-plane notification will ever come.
  auto h = client_->GetLayers(kBucket, Toy(StoredLayout::k2LTD), **buffer);
  ASSERT_TRUE(h.has_value()) << h.error();
  const Status layer = h->WaitLayer(0);
  EXPECT_EQ(layer.code(), Code::kInvalidArgument) << layer;
  EXPECT_EQ(layer.field(), "x-oc-layout") << layer;
  // The answer travels as data: S3 code, HTTP status, the gateway's request id; not a timeout.
  const ErrorInfo* info = ErrorInfoOf(layer);
  ASSERT_NE(info, nullptr) << layer;
  EXPECT_EQ(info->s3_code, "InvalidArgument");
  EXPECT_EQ(info->http_status, 400u);
  EXPECT_EQ(info->request_id.size(), 16u) << layer;
  EXPECT_FALSE(info->timed_out);
  Result<LayersResult> end = h->Wait();
  ASSERT_FALSE(end.has_value());
  EXPECT_EQ(end.error().code(), Code::kInvalidArgument);
  // The Delivery itself carries the answer's error: a wait that may not block at all sees it
  // (the data plane alone would report a timeout).
  for (uint32_t l = 0; l < kLayers; ++l) {
    const Status now = h->WaitLayer(l, std::chrono::milliseconds(0));
    EXPECT_EQ(now.code(), Code::kInvalidArgument) << l << " " << now;
  }
}

// A plain S3 error answer of the real gateway: its <Message> is the Status message, and its
// <Code>, HTTP status and x-amz-request-id (a fresh 16-hex-digit id per request) are the
// ErrorInfo; nothing has to be parsed out of the message.
TEST_F(GatewayFixture, GatewayErrorsCarryTheirS3CodeStatusAndRequestId) {
  Result<std::string> missing = client_->GetObjectBytes(kBucket, "no-such-key");
  ASSERT_FALSE(missing.has_value());
  const Status& s = missing.error();
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_EQ(s.subject(), Subject::kKey) << s;
  const ErrorInfo* info = ErrorInfoOf(s);
  ASSERT_NE(info, nullptr) << s;
  EXPECT_EQ(info->s3_code, "NoSuchKey");
  EXPECT_EQ(info->http_status, 404u);
  ASSERT_EQ(info->request_id.size(), 16u) << s;
  EXPECT_EQ(info->request_id.find_first_not_of("0123456789ABCDEFabcdef"), std::string::npos) << s;
  EXPECT_FALSE(info->timed_out);
  EXPECT_EQ(s.message().find("NoSuchKey"), std::string_view::npos) << s;   // not in the text
  EXPECT_NE(s.ToString().find(info->request_id), std::string::npos) << s;  // but logged
  Result<std::string> again = client_->GetObjectBytes(kBucket, "no-such-key");
  ASSERT_FALSE(again.has_value());
  ASSERT_NE(ErrorInfoOf(again.error()), nullptr);
  EXPECT_NE(ErrorInfoOf(again.error())->request_id, info->request_id);  // one id per request
  const Status bucket = client_->DeleteObject("no-such-bucket", "k");
  ASSERT_NE(ErrorInfoOf(bucket), nullptr) << bucket;
  EXPECT_EQ(ErrorInfoOf(bucket)->s3_code, "NoSuchBucket");
  EXPECT_EQ(bucket.subject(), Subject::kBucket);
}

TEST_F(GatewayFixture, ManyGetLayersShareTheBoundedRequestExecutor) {
  const Descriptor d = Toy(StoredLayout::kL2TD);
  const std::vector<std::byte> chunks = testutil::PatternBytes(9, 2 * kLayers * kLayerBytes);
  ASSERT_TRUE(client_->PutChunks(kBucket, d, chunks).has_value());
  // More requests than requests_in_flight (16): the later ones wait their turn and all end.
  constexpr int kRequests = 40;
  std::vector<std::vector<std::byte>> outs(kRequests, std::vector<std::byte>(chunks.size()));
  std::vector<LayerHandle> handles;
  for (int i = 0; i < kRequests; ++i) {
    auto h = client_->GetLayersHttp(kBucket, d, outs[i]);
    ASSERT_TRUE(h.has_value()) << h.error();
    handles.push_back(std::move(*h));
  }
  for (int i = 0; i < kRequests; ++i) {
    Result<LayersResult> r = handles[i].Wait();
    ASSERT_TRUE(r.has_value()) << i << " " << r.error();
    EXPECT_EQ(r->summary.matched_chunks, 2u);
    EXPECT_EQ(handles[i].layers_ready(), kLayers);
  }
}

TEST(ClientOptions, RequestsInFlightMustBePositive) {
  ClientOptions o;
  o.requests_in_flight = 0;
  EXPECT_EQ(o.Validate().field(), "requests_in_flight");
}

}  // namespace
}  // namespace oc::client
