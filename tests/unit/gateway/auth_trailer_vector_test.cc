// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER against AWS's published worked example
// ("Signature calculations for trailing headers", auth_vectors.h [trailer]): the seed, every
// chunk signature and the trailer signature are AWS's numbers, not ones computed here with the
// verifier's own formula, so a verifier that signs the trailer differently from AWS fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "auth/aws_chunked.h"
#include "auth/sigv4.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using testing::AwsTime;

testing::OwnedRequest AwsTrailerRequest(std::string_view seed) {
  testing::OwnedRequest req{"PUT", std::string(testing::kAwsChunkedTarget), {}};
  for (const auto& [n, v] : testing::AwsTrailerHeaders()) {
    req.headers.emplace_back(std::string(n), std::string(v));
  }
  req.headers.emplace_back(
      "Authorization", testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                                   testing::kAwsTrailerSignedHeaders, seed));
  return req;
}

// The example's request authenticated as the gateway does (trailer modes accepted).
Result<AuthResult> AuthenticateExample(std::string_view seed) {
  static const Credentials creds = testing::AwsCredentials();
  AuthOptions options;
  options.accept_unsigned_trailer = true;
  const Authenticator auth(creds, options);
  return auth.Authenticate(AwsTrailerRequest(seed).View(), AwsTime());
}

std::string ChunkLine(uint64_t size, std::string_view signature) {
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(size));
  return std::string(hex) + ";chunk-signature=" + std::string(signature) + "\r\n";
}

// The body as the page lists it: each chunk, the final chunk's line followed at once by the
// trailer line and the x-amz-trailer-signature line, then the empty line ending the trailer.
std::string AwsTrailerBody(std::string_view trailer_value = testing::kAwsTrailerValue,
                           std::string_view trailer_signature = testing::kAwsTrailerSignature,
                           size_t tampered_chunk = 3) {
  std::string body;
  for (size_t i = 0; i < 3; ++i) {
    std::string sig(testing::kAwsTrailerChunkSignatures[i]);
    if (i == tampered_chunk) {
      sig[5] = sig[5] == '0' ? '1' : '0';
    }
    body += ChunkLine(testing::kAwsChunkSizes[i], sig);
    if (testing::kAwsChunkSizes[i] > 0) {
      body += std::string(testing::kAwsChunkSizes[i], 'a') + "\r\n";
    }
  }
  body += std::string(testing::kAwsTrailerName) + ":" + std::string(trailer_value) + "\r\n";
  body += "x-amz-trailer-signature:" + std::string(trailer_signature) + "\r\n\r\n";
  return body;
}

struct Decoded {
  std::string payload;
  std::string trailer_checksum;
  Status status;  // first error from Next, else Finish()
};

Decoded Decode(const AuthResult& auth, std::string_view body, size_t piece) {
  AwsChunkedDecoder decoder(auth);
  Decoded out;
  while (!body.empty()) {
    ByteSpan in = AsBytes(body.substr(0, std::min(piece, body.size())));
    body.remove_prefix(in.size());
    while (!in.empty()) {
      Result<AwsChunkedDecoder::Step> step = decoder.Next(in);
      if (!step.has_value()) {
        out.status = step.error();
        return out;
      }
      out.payload.append(AsText(step->payload));
      in = in.subspan(step->consumed);
    }
  }
  out.status = decoder.Finish();
  out.trailer_checksum = decoder.trailer_checksum();
  return out;
}

TEST(AwsTrailerVector, CanonicalRequestAndStringToSignAreThePublishedOnes) {
  const testing::OwnedRequest req = AwsTrailerRequest(testing::kAwsTrailerSeedSignature);
  const std::vector<std::string> names = testing::SplitSigned(testing::kAwsTrailerSignedHeaders);
  const std::string canonical =
      sigv4::CanonicalRequest("PUT", sigv4::CanonicalUri(testing::kAwsChunkedTarget).value(), "",
                              sigv4::CanonicalHeaders(req.View(), names, "Authorization").value(),
                              names, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER");
  EXPECT_EQ(canonical, testing::kAwsTrailerCanonicalRequest);
  EXPECT_EQ(sigv4::StringToSign(testing::kAwsDate, testing::kAwsScope, canonical),
            testing::kAwsTrailerStringToSign);
  EXPECT_EQ(sigv4::Sha256Hex(std::string(testing::kAwsTrailerName) + ":" +
                             std::string(testing::kAwsTrailerValue) + "\n"),
            testing::kAwsTrailerHash);
}

TEST(AwsTrailerVector, AuthenticateAcceptsThePublishedSeed) {
  Result<AuthResult> r = AuthenticateExample(testing::kAwsTrailerSeedSignature);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->payload, PayloadMode::kStreamingSignedTrailer);
  EXPECT_EQ(r->trailer, testing::kAwsTrailerName);
  EXPECT_EQ(r->decoded_content_length, 66560u);
  EXPECT_EQ(r->streaming.seed_signature, testing::kAwsTrailerSeedSignature);
  EXPECT_EQ(r->streaming.amz_date, testing::kAwsDate);
  EXPECT_EQ(r->streaming.scope, testing::kAwsScope);

  std::string wrong(testing::kAwsTrailerSeedSignature);
  wrong[0] = '0';
  Result<AuthResult> bad = AuthenticateExample(wrong);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kUnauthenticated) << bad.error();
}

TEST(AwsTrailerVector, DecodesThePublishedBodyInAnyPieceSize) {
  Result<AuthResult> auth = AuthenticateExample(testing::kAwsTrailerSeedSignature);
  ASSERT_TRUE(auth.has_value()) << auth.error();
  const std::string body = AwsTrailerBody();
  ASSERT_EQ(body.size(), testing::kAwsTrailerBodyBytes);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{84}, size_t{85}, size_t{4096}, size_t{65536},
                       size_t{66700}, body.size()}) {
    SCOPED_TRACE(piece);
    Decoded d = Decode(*auth, body, piece);
    ASSERT_TRUE(d.status.ok()) << d.status;
    EXPECT_EQ(d.payload, std::string(66560, 'a'));
    EXPECT_EQ(d.trailer_checksum, testing::kAwsTrailerValue);
  }
}

TEST(AwsTrailerVector, EveryPublishedSignatureIsChecked) {
  Result<AuthResult> auth = AuthenticateExample(testing::kAwsTrailerSeedSignature);
  ASSERT_TRUE(auth.has_value()) << auth.error();
  std::string bad_trailer_sig(testing::kAwsTrailerSignature);
  bad_trailer_sig[63] = bad_trailer_sig[63] == '0' ? '1' : '0';
  struct Row {
    const char* what;
    std::string body;
    std::string_view field;
  };
  const Row rows[] = {
      {"chunk 1", AwsTrailerBody(testing::kAwsTrailerValue, testing::kAwsTrailerSignature, 0),
       "chunk-signature"},
      {"chunk 2", AwsTrailerBody(testing::kAwsTrailerValue, testing::kAwsTrailerSignature, 1),
       "chunk-signature"},
      {"final chunk", AwsTrailerBody(testing::kAwsTrailerValue, testing::kAwsTrailerSignature, 2),
       "chunk-signature"},
      {"trailer signature", AwsTrailerBody(testing::kAwsTrailerValue, bad_trailer_sig),
       "x-amz-trailer-signature"},
      // The old page's number: the trailer signed as if it were a payload chunk.
      {"old page's trailer signature",
       AwsTrailerBody(testing::kAwsTrailerValue, testing::kAwsTrailerSignatureOfOldPage),
       "x-amz-trailer-signature"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Decoded d = Decode(*auth, row.body, 1000);
    EXPECT_EQ(d.status.code(), Code::kUnauthenticated) << d.status;
    EXPECT_EQ(d.status.subject(), Subject::kSignature) << d.status;
    EXPECT_EQ(d.status.field(), row.field) << d.status;
  }
}

// The published trailer signature is the HMAC of the published trailer string to sign; the
// old page's number is the HMAC of the same lines under the chunk prefix. Recorded so that a
// future reader meeting 63bddb24... in another implementation knows where it comes from.
TEST(AwsTrailerVector, TheTwoPublishedTrailerSignaturesExplained) {
  const sigv4::Sha256Digest key =
      sigv4::DeriveSigningKey(testing::kAwsSecretKey, "20130524", "us-east-1", "s3");
  const std::string tail = "\n" + std::string(testing::kAwsDate) + "\n" +
                           std::string(testing::kAwsScope) + "\n" +
                           std::string(testing::kAwsTrailerChunkSignatures[2]) + "\n" +
                           std::string(testing::kAwsTrailerHash);
  EXPECT_EQ(sigv4::SignatureHex(key, "AWS4-HMAC-SHA256-TRAILER" + tail),
            testing::kAwsTrailerSignature);
  EXPECT_EQ(sigv4::SignatureHex(key, "AWS4-HMAC-SHA256-PAYLOAD" + tail),
            testing::kAwsTrailerSignatureOfOldPage);
}

}  // namespace
}  // namespace oc::gateway::auth
