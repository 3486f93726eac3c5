// The route table: method x level x sub-resource -> S3 operation, path and virtual-host style.
#include "router.h"

#include <gtest/gtest.h>

namespace oc::gateway {
namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

TEST(Router, RoutesEachOperation) {
  struct Row {
    std::string_view method;
    std::string_view path;
    Query query;
    bool copy_source;
    S3Op op;
    std::string_view bucket;
    std::string_view key;
  };
  const Row rows[] = {
      {"GET", "/", {}, false, S3Op::kListBuckets, "", ""},
      {"PUT", "/b", {}, false, S3Op::kCreateBucket, "b", ""},
      {"DELETE", "/b", {}, false, S3Op::kDeleteBucket, "b", ""},
      {"HEAD", "/b", {}, false, S3Op::kHeadBucket, "b", ""},
      {"GET", "/b", {{"location", ""}}, false, S3Op::kGetBucketLocation, "b", ""},
      {"GET", "/b", {{"acl", ""}}, false, S3Op::kGetBucketAcl, "b", ""},
      {"GET", "/b", {{"versioning", ""}}, false, S3Op::kGetBucketVersioning, "b", ""},
      {"GET", "/b", {}, false, S3Op::kListObjects, "b", ""},
      {"GET", "/b/", {{"prefix", "a"}}, false, S3Op::kListObjects, "b", ""},
      {"GET", "/b", {{"list-type", "2"}}, false, S3Op::kListObjectsV2, "b", ""},
      {"GET", "/b", {{"uploads", ""}}, false, S3Op::kListMultipartUploads, "b", ""},
      {"POST", "/b", {{"delete", ""}}, false, S3Op::kDeleteObjects, "b", ""},
      {"PUT", "/b/k/x", {}, false, S3Op::kPutObject, "b", "k/x"},
      {"PUT", "/b/k", {}, true, S3Op::kCopyObject, "b", "k"},
      {"GET", "/b/k", {{"response-content-type", "x"}}, false, S3Op::kGetObject, "b", "k"},
      {"HEAD", "/b/k", {}, false, S3Op::kHeadObject, "b", "k"},
      {"DELETE", "/b/k", {}, false, S3Op::kDeleteObject, "b", "k"},
      {"GET", "/b/k", {{"acl", ""}}, false, S3Op::kGetObjectAcl, "b", "k"},
      {"POST", "/b/k", {{"uploads", ""}}, false, S3Op::kCreateMultipartUpload, "b", "k"},
      {"PUT", "/b/k", {{"partNumber", "1"}, {"uploadId", "u"}}, false, S3Op::kUploadPart, "b", "k"},
      {"PUT",
       "/b/k",
       {{"partNumber", "1"}, {"uploadId", "u"}},
       true,
       S3Op::kUploadPartCopy,
       "b",
       "k"},
      {"POST", "/b/k", {{"uploadId", "u"}}, false, S3Op::kCompleteMultipartUpload, "b", "k"},
      {"DELETE", "/b/k", {{"uploadId", "u"}}, false, S3Op::kAbortMultipartUpload, "b", "k"},
      {"GET", "/b/k", {{"uploadId", "u"}}, false, S3Op::kListParts, "b", "k"},
      // Object tagging (issue 17).
      {"GET", "/b/k", {{"tagging", ""}}, false, S3Op::kGetObjectTagging, "b", "k"},
      {"PUT", "/b/k", {{"tagging", ""}}, false, S3Op::kPutObjectTagging, "b", "k"},
      {"DELETE", "/b/k", {{"tagging", ""}}, false, S3Op::kDeleteObjectTagging, "b", "k"},
      // Issue 29: ListObjectVersions, GetObjectAttributes, PUT ?acl (private only).
      {"GET", "/b", {{"versions", ""}}, false, S3Op::kListObjectVersions, "b", ""},
      {"GET", "/b/k", {{"attributes", ""}}, false, S3Op::kGetObjectAttributes, "b", "k"},
      {"PUT", "/b", {{"acl", ""}}, false, S3Op::kPutBucketAcl, "b", ""},
      {"PUT", "/b/k", {{"acl", ""}}, false, S3Op::kPutObjectAcl, "b", "k"},
      // Issue 31: bucket lifecycle.
      {"PUT", "/b", {{"lifecycle", ""}}, false, S3Op::kPutBucketLifecycleConfiguration, "b", ""},
      {"GET", "/b", {{"lifecycle", ""}}, false, S3Op::kGetBucketLifecycleConfiguration, "b", ""},
      {"DELETE", "/b", {{"lifecycle", ""}}, false, S3Op::kDeleteBucketLifecycle, "b", ""},
      {"GET", "/healthz", {}, false, S3Op::kHealthz, "", ""},
      {"GET", "/metrics", {}, false, S3Op::kMetrics, "", ""},
      // Sub-resources we do not serve: NotImplemented, never a plain operation.
      {"GET", "/b", {{"tagging", ""}}, false, S3Op::kNotImplemented, "b", ""},
      {"PUT", "/b", {{"versioning", ""}}, false, S3Op::kNotImplemented, "b", ""},
      {"GET", "/b/k", {{"versions", ""}}, false, S3Op::kNotImplemented, "b", "k"},
      {"GET", "/b", {{"versions", ""}, {"versionId", "x"}}, false, S3Op::kNotImplemented, "b", ""},
      {"GET", "/b", {{"policy", ""}}, false, S3Op::kNotImplemented, "b", ""},
      {"PUT", "/b/k", {{"lifecycle", ""}}, false, S3Op::kNotImplemented, "b", "k"},
      {"POST", "/b/k", {{"tagging", ""}}, false, S3Op::kNotImplemented, "b", "k"},
      {"GET",
       "/b/k",
       {{"versionId", "x"}, {"retention", ""}},
       false,
       S3Op::kNotImplemented,
       "b",
       "k"},
      {"POST", "/b/k", {}, false, S3Op::kNotImplemented, "b", "k"},
      {"PATCH", "/b/k", {}, false, S3Op::kMethodNotAllowed, "b", "k"},
      {"GET", "nope", {}, false, S3Op::kBadRequest, "", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.method) + " " + std::string(row.path));
    RouteInput in;
    in.method = row.method;
    in.host = "127.0.0.1:9000";
    in.path = row.path;
    in.query = &row.query;
    in.has_copy_source = row.copy_source;
    const Route r = RouteRequest(in, "");
    EXPECT_EQ(OpName(r.op), OpName(row.op));
    EXPECT_EQ(r.bucket, row.bucket);
    EXPECT_EQ(r.key, row.key);
  }
}

TEST(Router, VirtualHostStyle) {
  const Query none;
  RouteInput in;
  in.method = "GET";
  in.host = "photos.s3.example.com:9000";
  in.path = "/2024/a.jpg";
  in.query = &none;
  Route r = RouteRequest(in, "s3.example.com");
  EXPECT_EQ(r.op, S3Op::kGetObject);
  EXPECT_EQ(r.bucket, "photos");
  EXPECT_EQ(r.key, "2024/a.jpg");
  in.path = "/";
  r = RouteRequest(in, "s3.example.com");
  EXPECT_EQ(r.op, S3Op::kListObjects);
  EXPECT_EQ(r.bucket, "photos");
  // The bare domain, or another host, is path style.
  in.host = "s3.example.com";
  in.path = "/b/k";
  r = RouteRequest(in, "s3.example.com");
  EXPECT_EQ(r.bucket, "b");
  EXPECT_EQ(r.key, "k");
  in.host = "evil-s3.example.com";
  r = RouteRequest(in, "s3.example.com");
  EXPECT_EQ(r.bucket, "b");
}

TEST(Router, SignedRequestsForOpsPathsReachS3) {
  const Query none;
  RouteInput in;
  in.method = "GET";
  in.path = "/stats";
  in.query = &none;
  in.has_credentials = true;
  const Route r = RouteRequest(in, "");
  EXPECT_EQ(r.op, S3Op::kListObjects);
  EXPECT_EQ(r.bucket, "stats");
}

}  // namespace
}  // namespace oc::gateway
