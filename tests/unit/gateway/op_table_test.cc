// The operation table (gateway/src/s3_ops.def): one row per operation, no two rows answering
// the same request shape, every routed row reachable through RouteRequest, the columns
// consistent with each other and with the handler column, and who may call what.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "handlers/handlers.h"
#include "op_table.h"
#include "router.h"

namespace oc::gateway {
namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

constexpr Method kAllMethods[] = {Method::kGet, Method::kHead, Method::kPut, Method::kPost,
                                  Method::kDelete};

std::string_view MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kHead:
      return "HEAD";
    case Method::kPut:
      return "PUT";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
    case Method::kNoMethod:
      break;
  }
  return "";
}

bool Routed(const OpRow& row) {
  return row.level == Level::kService || row.level == Level::kBucket || row.level == Level::kObject;
}

std::set<std::string_view> OpsWhere(bool (*pred)(const OpRow&)) {
  std::set<std::string_view> out;
  for (const OpRow& row : kOpRows) {
    if (pred(row)) {
      out.insert(row.name);
    }
  }
  return out;
}

TEST(OpTable, EveryOperationHasExactlyOneRow) {
  ASSERT_EQ(kOpRows.size(), kS3OpCount);
  std::set<std::string_view> names;
  for (size_t i = 0; i < kOpRows.size(); ++i) {
    const OpRow& row = kOpRows[i];
    SCOPED_TRACE(row.name);
    EXPECT_EQ(static_cast<size_t>(row.op), i);
    EXPECT_EQ(&RowOf(row.op), &row);
    EXPECT_EQ(OpName(row.op), row.name);
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
    // The handler column: a handler, or an upload's open/finish pair, never both or neither.
    const OpHandler& h = HandlerOf(row.op);
    const bool upload = h.open != nullptr && h.finish != nullptr;
    EXPECT_NE(h.handle != nullptr, upload);
    EXPECT_EQ(h.open != nullptr, h.finish != nullptr);
  }
}

TEST(OpTable, NoTwoRowsAnswerTheSameRequestShape) {
  for (size_t i = 0; i < kOpRows.size(); ++i) {
    for (size_t j = i + 1; j < kOpRows.size(); ++j) {
      const OpRow& a = kOpRows[i];
      const OpRow& b = kOpRows[j];
      if (a.level == Level::kUnrouted || b.level == Level::kUnrouted) {
        continue;
      }
      const bool same = a.methods.Overlaps(b.methods) && a.level == b.level && a.query == b.query &&
                        a.copy == b.copy;
      EXPECT_FALSE(same) << a.name << " and " << b.name << " answer the same requests";
    }
  }
}

TEST(OpTable, EveryRoutedRowIsReachable) {
  for (const OpRow& row : kOpRows) {
    for (Method m : kAllMethods) {
      if (!row.methods.Has(m) || !(Routed(row) || row.level == Level::kEndpoint)) {
        continue;
      }
      SCOPED_TRACE(std::string(MethodName(m)) + " " + std::string(row.name));
      Query query;
      RouteInput in;
      in.method = MethodName(m);
      in.host = "127.0.0.1:9000";
      in.query = &query;
      std::string path;
      switch (row.level) {
        case Level::kService:
          path = "/";
          break;
        case Level::kBucket:
          path = "/b";
          break;
        case Level::kObject:
          path = "/b/k";
          break;
        default:  // kEndpoint: the column holds the path
          path = "/" + std::string(row.query);
          break;
      }
      in.path = path;
      if (Routed(row) && !row.query.empty()) {
        query.emplace_back(std::string(row.query), "1");
      }
      in.has_copy_source = row.copy;
      EXPECT_EQ(OpName(RouteRequest(in, "").op), row.name);
      if (row.level == Level::kEndpoint) {
        // A signed request for that path is S3's (a bucket called "healthz").
        in.has_credentials = true;
        EXPECT_NE(OpName(RouteRequest(in, "").op), row.name);
      }
    }
  }
}

TEST(OpTable, OnlyTheRoutersAnswersAreUnrouted) {
  EXPECT_EQ(OpsWhere([](const OpRow& r) { return r.level == Level::kUnrouted; }),
            (std::set<std::string_view>{"NotImplemented", "MethodNotAllowed", "BadRequest"}));
  for (const OpRow& row : kOpRows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.level == Level::kUnrouted, row.methods.bits == 0);
  }
}

// Who may call each operation. A change here changes who may call it: the access column of
// s3_ops.def is the one place that decides, and this is its record.
TEST(OpTable, WhoMayCallEachOperation) {
  const auto access_is = [](AccessClass a) {
    std::set<std::string_view> out;
    for (const OpRow& row : kOpRows) {
      if (row.access == a) {
        out.insert(row.name);
      }
    }
    return out;
  };
  // Anonymous callers, on gateway.public_read_buckets only.
  EXPECT_EQ(access_is(AccessClass::kPublicRead),
            (std::set<std::string_view>{"GetObject", "GetObjectCache", "HeadObject", "ListObjects",
                                        "ListObjectsV2", "HeadBucket", "GetBucketLocation"}));
  // Nobody is authenticated: the operations endpoints and a target that is not a path.
  EXPECT_EQ(access_is(AccessClass::kUnsigned),
            (std::set<std::string_view>{"Healthz", "Readyz", "Stats", "Metrics", "BadRequest"}));
  EXPECT_EQ(access_is(AccessClass::kSignedUser),
            (std::set<std::string_view>{"ListBuckets", "CreateBucket"}));
  EXPECT_EQ(access_is(AccessClass::kAnyCaller),
            (std::set<std::string_view>{"NotImplemented", "MethodNotAllowed"}));
  // A bucket's lifecycle configuration deletes its objects: its owner's, an admin's or a
  // grantee's only, like the other bucket writes.
  for (std::string_view name : {"PutBucketLifecycleConfiguration",
                                "GetBucketLifecycleConfiguration", "DeleteBucketLifecycle"}) {
    EXPECT_EQ(access_is(AccessClass::kBucketUser).count(name), 1u) << name;
  }
  // Every other operation is the bucket's owner's, an admin's or a grantee's.
  for (const OpRow& row : kOpRows) {
    SCOPED_TRACE(row.name);
    if (row.access == AccessClass::kBucketUser) {
      EXPECT_TRUE(row.level == Level::kBucket || row.level == Level::kObject);
    }
    // Nothing that writes is ever anonymous.
    if (row.access == AccessClass::kPublicRead) {
      EXPECT_FALSE(row.methods.Has(Method::kPut) || row.methods.Has(Method::kDelete));
      EXPECT_TRUE(row.body == BodyPolicy::kNoBody || row.body == BodyPolicy::kDescriptor);
    }
  }
}

TEST(OpTable, ColumnsAgree) {
  for (const OpRow& row : kOpRows) {
    SCOPED_TRACE(row.name);
    const OpHandler& h = HandlerOf(row.op);
    const bool upload =
        row.body == BodyPolicy::kUpload || row.body == BodyPolicy::kDescriptorUpload;
    EXPECT_EQ(upload, h.open != nullptr) << "a streamed body needs an open/finish pair";
    // What runs on the I/O thread never touches the Store: no S3 operation, no body.
    if (row.runs_on == RunOn::kIoThread) {
      EXPECT_FALSE(Routed(row));
      EXPECT_EQ(row.body, BodyPolicy::kNoBody);
    }
    if (row.runs_on == RunOn::kCachedReads) {
      EXPECT_TRUE(row.methods.bits != 0 && !row.methods.Has(Method::kPut) &&
                  !row.methods.Has(Method::kPost) && !row.methods.Has(Method::kDelete));
      EXPECT_EQ(row.body, BodyPolicy::kNoBody);
    }
    // Unauthenticated rows read no body; a descriptor body is a POST's.
    if (row.access == AccessClass::kUnsigned) {
      EXPECT_EQ(row.body, BodyPolicy::kNoBody);
      EXPECT_FALSE(Routed(row));
    }
    if (row.body == BodyPolicy::kDescriptor) {
      EXPECT_TRUE(row.methods.Has(Method::kPost));
    }
    if (row.copy) {
      EXPECT_EQ(row.level, Level::kObject);
    }
  }
}

// The query keys that name a sub-resource: the served ones (a bucket or object row's query)
// and the unserved rows, never both; a request naming one its row does not serve is 501.
TEST(OpTable, SubresourcesNoRowServesAreNotImplemented) {
  std::set<std::string_view> served;
  for (const OpRow& row : kOpRows) {
    if ((row.level == Level::kBucket || row.level == Level::kObject) && !row.query.empty()) {
      served.insert(row.query);
    }
  }
  std::set<std::string_view> unserved;
  for (std::string_view key : kUnservedSubresources) {
    EXPECT_TRUE(unserved.insert(key).second) << key << " listed twice";
    EXPECT_EQ(served.count(key), 0u) << key << " is served by a row and listed as unserved";
  }
  // What S3 defines as sub-resources, as the router knew them before the table: every one
  // still names a sub-resource.
  for (std::string_view key : {"accelerate",
                               "acl",
                               "analytics",
                               "attributes",
                               "cors",
                               "delete",
                               "encryption",
                               "intelligent-tiering",
                               "inventory",
                               "legal-hold",
                               "lifecycle",
                               "location",
                               "logging",
                               "metrics",
                               "notification",
                               "object-lock",
                               "objectcache",
                               "ownershipControls",
                               "policy",
                               "policyStatus",
                               "publicAccessBlock",
                               "replication",
                               "requestPayment",
                               "restore",
                               "retention",
                               "select",
                               "tagging",
                               "torrent",
                               "uploadId",
                               "uploads",
                               "versioning",
                               "versions",
                               "website",
                               "list-type",
                               "versionId"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(IsSubresource(key));
    // DeleteBucket serves no sub-resource, so naming any one is 501, except the one a bucket
    // DELETE row of its own serves (DeleteBucketLifecycle).
    Query query = {{std::string(key), ""}};
    RouteInput in;
    in.method = "DELETE";
    in.path = "/b";
    in.query = &query;
    EXPECT_EQ(RouteRequest(in, "").op,
              key == "lifecycle" ? S3Op::kDeleteBucketLifecycle : S3Op::kNotImplemented);
  }
  EXPECT_EQ(served.size() + unserved.size(), 35u);
  // Ordinary parameters are not sub-resources.
  for (std::string_view key : {"prefix", "partNumber", "x-id", "response-content-type", ""}) {
    SCOPED_TRACE(key);
    EXPECT_FALSE(IsSubresource(key));
    Query query = {{std::string(key), ""}};
    RouteInput in;
    in.method = "DELETE";
    in.path = "/b";
    in.query = &query;
    EXPECT_EQ(RouteRequest(in, "").op, S3Op::kDeleteBucket);
  }
}

// The most specific row wins whatever the rows' order: a sub-resource over a plain row, a copy
// source over none; two sub-resources are 501.
TEST(OpTable, MostSpecificRowWins) {
  struct Row {
    std::string_view method;
    std::string_view path;
    Query query;
    bool copy_source;
    S3Op op;
  };
  const Row rows[] = {
      {"PUT", "/b/k", {{"acl", ""}}, true, S3Op::kPutObjectAcl},
      {"PUT", "/b/k", {{"uploadId", "u"}, {"partNumber", "1"}}, true, S3Op::kUploadPartCopy},
      {"PUT", "/b/k", {{"uploadId", "u"}, {"acl", ""}}, true, S3Op::kNotImplemented},
      {"PUT", "/b/k", {}, true, S3Op::kCopyObject},
      {"PUT", "/b", {{"acl", ""}}, true, S3Op::kPutBucketAcl},
      {"GET", "/b", {{"list-type", "2"}, {"versions", ""}}, false, S3Op::kNotImplemented},
      {"GET", "/b/k", {{"uploadId", "u"}, {"acl", ""}}, false, S3Op::kNotImplemented},
      {"POST", "/b", {{"objectcache", ""}, {"probe", ""}}, false, S3Op::kGetObjectCache},
      {"POST", "/b", {}, false, S3Op::kNotImplemented},
      {"POST", "/", {}, false, S3Op::kMethodNotAllowed},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.method) + " " + std::string(row.path));
    RouteInput in;
    in.method = row.method;
    in.path = row.path;
    in.query = &row.query;
    in.has_copy_source = row.copy_source;
    EXPECT_EQ(OpName(RouteRequest(in, "").op), OpName(row.op));
  }
}

}  // namespace
}  // namespace oc::gateway
