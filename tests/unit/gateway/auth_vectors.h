#pragma once
// Known-answer vectors for SigV4, as published by AWS (facts, reproduced for testing).
//
// Credentials of every AWS example: access key AKIAIOSFODNN7EXAMPLE, secret
// wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, region us-east-1, service s3, time
// 20130524T000000Z.
//
// Sources:
//  [header] Amazon S3 API Reference, "Signature Calculations for the Authorization Header:
//           Transferring Payload in a Single Chunk (AWS Signature Version 4)", section
//           "Examples: Signature Calculations" (GET Object, PUT Object, GET Bucket Lifecycle,
//           Get Bucket (List Objects)).
//           https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
//  [query]  Amazon S3 API Reference, "Authenticating Requests: Using Query Parameters (AWS
//           Signature Version 4)", "An Example".
//           https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
//  [chunk]  Amazon S3 API Reference, "Signature Calculations for the Authorization Header:
//           Transferring Payload in Multiple Chunks (Chunked Upload) (AWS Signature Version
//           4)", "Example: PUT Object" (65536 + 1024 bytes of 'a', then the final chunk).
//           https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
//  [trailer] Amazon S3 API Reference, "Signature calculations for trailing headers (chunked
//           uploads) (AWS Signature Version 4)", "Examples: Checking signature calculations"
//           (the same 65536 + 1024 bytes of 'a', a CRC32C trailer, STREAMING-AWS4-HMAC-SHA256-
//           PAYLOAD-TRAILER).
//           https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
//           Two lines of that page disagree with its own numbers and are not used: the
//           printed Authorization header lists content-length and omits x-amz-trailer, while
//           the seed signature is the one of the canonical request printed above it (no
//           content-length, with x-amz-trailer); and Content-Length 66824 is the one of the
//           example without a trailer, the body below being 66946 bytes. Earlier versions of
//           the page printed the trailer signature 63bddb24...843f, which is the HMAC of the
//           page's trailer string to sign with "AWS4-HMAC-SHA256-PAYLOAD" as its first line
//           instead of "AWS4-HMAC-SHA256-TRAILER"; the page now prints d81f82fc...e435, the
//           HMAC of the string to sign as printed (auth_trailer_vector_test.cc checks both).

#include <string_view>
#include <utility>
#include <vector>

namespace oc::gateway::auth::testing {

inline constexpr std::string_view kAwsAccessKey = "AKIAIOSFODNN7EXAMPLE";
inline constexpr std::string_view kAwsSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
inline constexpr std::string_view kAwsDate = "20130524T000000Z";
inline constexpr std::string_view kAwsScope = "20130524/us-east-1/s3/aws4_request";
inline constexpr std::string_view kEmptyHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct HeaderVector {
  std::string_view name;
  std::string_view method;
  std::string_view target;                                             // as sent on the wire
  std::vector<std::pair<std::string_view, std::string_view>> headers;  // without Authorization
  std::string_view signed_headers;
  std::string_view canonical_request;  // empty when the page does not print it
  std::string_view signature;
};

// [header] examples.
inline std::vector<HeaderVector> AwsHeaderVectors() {
  return {
      {"GET Object",
       "GET",
       "/test.txt",
       {{"Host", "examplebucket.s3.amazonaws.com"},
        {"Range", "bytes=0-9"},
        {"x-amz-content-sha256", kEmptyHash},
        {"x-amz-date", kAwsDate}},
       "host;range;x-amz-content-sha256;x-amz-date",
       "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
       "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
       "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
      {"PUT Object",
       "PUT",
       "/test%24file.text",
       {{"Host", "examplebucket.s3.amazonaws.com"},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", kAwsDate},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256",
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
       "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
       "",
       "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
      {"GET Bucket Lifecycle",
       "GET",
       "/?lifecycle",
       {{"Host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-date", kAwsDate},
        {"x-amz-content-sha256", kEmptyHash}},
       "host;x-amz-content-sha256;x-amz-date",
       "",
       "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
      {"Get Bucket (List Objects)",
       "GET",
       "/?max-keys=2&prefix=J",
       {{"Host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-date", kAwsDate},
        {"x-amz-content-sha256", kEmptyHash}},
       "host;x-amz-content-sha256;x-amz-date",
       "",
       "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
  };
}

// The body of the PUT Object example.
inline constexpr std::string_view kAwsPutBody = "Welcome to Amazon S3.";
// The string to sign of the GET Object example.
inline constexpr std::string_view kAwsGetStringToSign =
    "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972";

// [query] GET /test.txt presigned for 86400 s at 20130524T000000Z.
inline constexpr std::string_view kAwsPresignedTarget =
    "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
inline constexpr std::string_view kAwsPresignedHost = "examplebucket.s3.amazonaws.com";

// [chunk] PUT /examplebucket/chunkObject.txt (path style, host s3.amazonaws.com).
inline constexpr std::string_view kAwsChunkedTarget = "/examplebucket/chunkObject.txt";
inline std::vector<std::pair<std::string_view, std::string_view>> AwsChunkedHeaders() {
  return {{"Host", "s3.amazonaws.com"},
          {"x-amz-date", kAwsDate},
          {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
          {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
          {"Content-Encoding", "aws-chunked"},
          {"x-amz-decoded-content-length", "66560"},
          {"Content-Length", "66824"}};
}
inline constexpr std::string_view kAwsChunkedSignedHeaders =
    "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
    "x-amz-decoded-content-length;x-amz-storage-class";
inline constexpr std::string_view kAwsSeedSignature =
    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
inline constexpr uint64_t kAwsChunkSizes[] = {65536, 1024, 0};
inline constexpr std::string_view kAwsChunkSignatures[] = {
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};
inline constexpr uint64_t kAwsChunkedBodyBytes = 66824;  // Content-Length of the example

// [trailer] PUT /examplebucket/chunkObject.txt (path style, host s3.amazonaws.com).
inline std::vector<std::pair<std::string_view, std::string_view>> AwsTrailerHeaders() {
  return {{"Host", "s3.amazonaws.com"},
          {"x-amz-date", kAwsDate},
          {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
          {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
          {"Content-Encoding", "aws-chunked"},
          {"x-amz-decoded-content-length", "66560"},
          {"x-amz-trailer", "x-amz-checksum-crc32c"}};
}
inline constexpr std::string_view kAwsTrailerSignedHeaders =
    "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
    "x-amz-storage-class;x-amz-trailer";
inline constexpr std::string_view kAwsTrailerCanonicalRequest =
    "PUT\n/examplebucket/chunkObject.txt\n\ncontent-encoding:aws-chunked\n"
    "host:s3.amazonaws.com\nx-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER\n"
    "x-amz-date:20130524T000000Z\nx-amz-decoded-content-length:66560\n"
    "x-amz-storage-class:REDUCED_REDUNDANCY\nx-amz-trailer:x-amz-checksum-crc32c\n\n"
    "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
    "x-amz-storage-class;x-amz-trailer\nSTREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
inline constexpr std::string_view kAwsTrailerStringToSign =
    "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
    "44d48b8c2f70eae815a0198cc73d7a546a73a93359c070abbaa5e6c7de112559";
inline constexpr std::string_view kAwsTrailerSeedSignature =
    "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
// Chunks of 65536, 1024 and 0 bytes of 'a' (kAwsChunkSizes).
inline constexpr std::string_view kAwsTrailerChunkSignatures[] = {
    "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
    "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
    "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
};
inline constexpr std::string_view kAwsTrailerName = "x-amz-checksum-crc32c";
inline constexpr std::string_view kAwsTrailerValue = "sOO8/Q==";  // CRC32C of the 66560 bytes
// hex(sha256("x-amz-checksum-crc32c:sOO8/Q==\n")), the last line of the trailer string to sign.
inline constexpr std::string_view kAwsTrailerHash =
    "1e376db7e1a34a8ef1c4bcee131a2d60a1cb62503747488624e10995f448d774";
inline constexpr std::string_view kAwsTrailerSignature =
    "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435";
// The trailer signature earlier versions of the page printed (see [trailer] above).
inline constexpr std::string_view kAwsTrailerSignatureOfOldPage =
    "63bddb248ad2590c92712055f51b8e78ab024eead08276b24f010b0efd74843f";
inline constexpr uint64_t kAwsTrailerBodyBytes = 66946;  // the body as sent

}  // namespace oc::gateway::auth::testing
