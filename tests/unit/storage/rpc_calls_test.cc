// The storage RPC's call table (storage-server/src/rpc/calls.h): a call's row sends the
// request fields its op has always carried, in wire order (the argument lists below are
// written from the op table of wire.h and docs/protocol.md "Storage RPC", not from the
// table), the client's views encode to the bytes the server decodes, and ValidateBody
// accepts them. A row whose field types do not match what a client passes does not compile
// (MakeParams).

#include <gtest/gtest.h>

#include "rpc/calls.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

constexpr uint64_t kRid = 0x0123456789abcdef;

// Encodes call C's request through the table (MakeParams, EncodeRequest: what RemoteStore
// sends) and `fields` directly; both must be the same frame, which the server decodes into
// C::Request and re-encodes unchanged.
template <typename C, typename... Fields>
void ExpectRequest(const Fields&... fields) {
  SCOPED_TRACE(OpName(C::op));
  std::vector<std::byte> table;
  EncodeRequest<C>(&table, kRid, MakeParams<C>(fields...));
  std::vector<std::byte> by_hand;
  EncodeFrame(&by_hand, C::op, 0, kRid, fields...);
  EXPECT_EQ(table, by_hand);

  const ByteSpan body = ByteSpan(table).subspan(kHeaderBytes);
  typename C::Request request;
  ASSERT_TRUE(DecodeRequest(body, &request).ok());
  std::vector<std::byte> again;
  std::apply([&](const auto&... f) { EncodeFrame(&again, C::op, 0, kRid, f...); }, request);
  EXPECT_EQ(again, table);
  EXPECT_TRUE(ValidateBody(C::op, 0, body).ok());
  if (!body.empty()) {
    EXPECT_FALSE(DecodeRequest(body.first(body.size() - 1), &request).ok());
  }
}

TEST(RpcCalls, EveryCallEncodesTheFieldsOfItsOpInWireOrder) {
  const std::string_view bucket_view = "bucket-ü";
  const std::string bucket = "bucket-ü";
  const std::string owner = "AKIDEXAMPLE";
  const ObjectKey key{"bucket-a", "dir/obj"};
  const ObjectKey dst{"bucket-b", "copy"};
  const std::string upload = "upload-1";
  const uint32_t part = 7;
  const uint32_t marker = 3;
  const uint32_t max = 100;
  PutOptions options;
  options.content_type = "text/plain";
  options.user_meta = {{"a", "1"}};
  options.expected_size = 5;
  const std::optional<PutOptions> replace = options;
  const std::optional<PutOptions> keep;
  ListOptions list;
  list.prefix = "p/";
  list.delimiter = "/";
  list.max_keys = 10;
  ListUploadsOptions uploads;
  uploads.key_marker = "k";
  uploads.max_uploads = 2;
  const std::vector<std::string> names = {"a", "", "c"};
  const std::vector<CompletedPart> parts = {{1, "e1", {"x-amz-checksum-crc32", "AAAAAQ=="}},
                                            {2, "e2", {}}};
  WriteConditions conditions;
  conditions.if_match = "\"e\"";
  CompleteOptions complete;
  complete.conditions.if_none_match = true;
  complete.checksum = {"x-amz-checksum-crc32", "AAAAAA==-2"};
  const ByteRange range{10, 20, false};

  ExpectRequest<CreateBucketCall>(bucket_view, owner);  // views, as RemoteStore holds them
  ExpectRequest<DeleteBucketCall>(bucket);
  ExpectRequest<HeadBucketCall>(bucket);
  ExpectRequest<ListBucketsCall>();
  ExpectRequest<HeadCall>(key);
  ExpectRequest<HeadManyCall>(bucket_view, std::span<const std::string>(names));
  ExpectRequest<HeadManyCall>(bucket, names);
  ExpectRequest<DeleteCall>(key);
  ExpectRequest<CopyCall>(key, dst, replace, conditions);
  ExpectRequest<CopyCall>(key, dst, keep, WriteConditions{});
  ExpectRequest<ListCall>(bucket, list);
  ExpectRequest<CreateUploadCall>(key, options);
  ExpectRequest<CompleteUploadCall>(key, upload, std::span<const CompletedPart>(parts), complete);
  ExpectRequest<AbortUploadCall>(key, upload);
  ExpectRequest<ListPartsCall>(key, upload, marker, max);
  ExpectRequest<ListUploadsCall>(bucket, uploads);
  ExpectRequest<KvDataPlaneCall>(bucket);
  ExpectRequest<StatsCall>();
  ExpectRequest<ServerInfoCall>();
  ExpectRequest<PutBeginCall>(key, options);
  ExpectRequest<UploadPartBeginCall>(key, upload, part, options);
  ExpectRequest<GetCall>(key, range);
}

// The retry rule docs/decisions/remote-store-placement-retry.md and
// remote-store-shared-placement.md state: reads, opening a writer and idempotent mutations may
// run again after their frame was sent; other mutations never.
TEST(RpcCalls, OnlyCallsThatChangeNothingOrAreIdempotentAreRetried) {
  EXPECT_EQ(CreateBucketCall::retry, Retry::kNo);
  EXPECT_EQ(DeleteBucketCall::retry, Retry::kNo);
  EXPECT_EQ(CopyCall::retry, Retry::kNo);
  EXPECT_EQ(CreateUploadCall::retry, Retry::kNo);
  EXPECT_EQ(CompleteUploadCall::retry, Retry::kNo);
  EXPECT_EQ(AbortUploadCall::retry, Retry::kNo);
  EXPECT_EQ(KvPutRetry(/*from_target=*/false), Retry::kNo);
  EXPECT_FALSE(RepeatableAfterSend(Retry::kNo));
  EXPECT_EQ(DeleteCall::retry, Retry::kIdempotent);
  EXPECT_EQ(DeleteIfCall::retry, Retry::kIdempotent);
  EXPECT_EQ(PutTagsCall::retry, Retry::kIdempotent);
  EXPECT_EQ(SetLifecycleCall::retry, Retry::kIdempotent);
  EXPECT_EQ(KvPutRetry(/*from_target=*/true), Retry::kIdempotent);
  EXPECT_TRUE(RepeatableAfterSend(Retry::kIdempotent));
  EXPECT_TRUE(RepeatableAfterSend(Retry::kIfPooled));
  EXPECT_EQ(HeadBucketCall::retry, Retry::kIfPooled);
  EXPECT_EQ(ListBucketsCall::retry, Retry::kIfPooled);
  EXPECT_EQ(HeadCall::retry, Retry::kIfPooled);
  EXPECT_EQ(HeadManyCall::retry, Retry::kIfPooled);
  EXPECT_EQ(ListCall::retry, Retry::kIfPooled);
  EXPECT_EQ(ListPartsCall::retry, Retry::kIfPooled);
  EXPECT_EQ(ListUploadsCall::retry, Retry::kIfPooled);
  EXPECT_EQ(KvDataPlaneCall::retry, Retry::kIfPooled);
  EXPECT_EQ(StatsCall::retry, Retry::kIfPooled);
  EXPECT_EQ(ServerInfoCall::retry, Retry::kIfPooled);
  EXPECT_EQ(PutBeginCall::retry, Retry::kIfPooled);
  EXPECT_EQ(UploadPartBeginCall::retry, Retry::kIfPooled);
  EXPECT_EQ(GetCall::retry, Retry::kIfPooled);
}

}  // namespace
}  // namespace oc::storage::rpc
