// Over 600 lines: AWS's vector at every piece size plus one case per malformed-body rule.
// aws-chunked decoding: AWS's published streaming example fed in every piece size, and each
// way a body can be wrong (signatures, sizes, framing, truncation, lengths).
#include "auth/aws_chunked.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "auth/checksum.h"
#include "auth/sigv4.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using testing::AwsTime;

// The seed of the AWS example, obtained the way the gateway does: by authenticating the
// example's headers.
StreamingSigner AwsSigner() {
  static const Credentials creds = testing::AwsCredentials();
  testing::OwnedRequest req{"PUT", std::string(testing::kAwsChunkedTarget), {}};
  for (const auto& [n, v] : testing::AwsChunkedHeaders()) {
    req.headers.emplace_back(std::string(n), std::string(v));
  }
  req.headers.emplace_back(
      "Authorization",
      testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                  testing::kAwsChunkedSignedHeaders, testing::kAwsSeedSignature));
  Authenticator auth(creds, AuthOptions{});
  Result<AuthResult> r = auth.Authenticate(req.View(), AwsTime());
  OC_CHECK(r.has_value());
  OC_CHECK(r->payload == PayloadMode::kStreamingSigned);
  OC_CHECK(r->decoded_content_length == 66560);
  return r->streaming;
}

std::string ChunkBytes(uint64_t size, std::string_view signature, char fill = 'a') {
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(size));
  return std::string(hex) + ";chunk-signature=" + std::string(signature) + "\r\n" +
         std::string(size, fill) + "\r\n";
}

std::string AwsBody() {
  std::string body;
  for (size_t i = 0; i < 3; ++i) {
    body += ChunkBytes(testing::kAwsChunkSizes[i], testing::kAwsChunkSignatures[i]);
  }
  return body;
}

struct Decoded {
  std::string payload;
  Status status;  // first error from Next, else Finish()
};

// Feeds `body` in pieces of `piece` bytes (the last may be shorter).
Decoded Decode(const StreamingSigner& signer, uint64_t decoded_length, std::string_view body,
               size_t piece) {
  AwsChunkedDecoder decoder(signer, decoded_length);
  Decoded out;
  while (!body.empty()) {
    ByteSpan in = AsBytes(body.substr(0, std::min(piece, body.size())));
    body.remove_prefix(in.size());
    while (!in.empty()) {
      Result<AwsChunkedDecoder::Step> step = decoder.Next(in);
      if (!step.has_value()) {
        out.status = step.error();
        EXPECT_FALSE(decoder.Next(AsBytes("x")).has_value()) << "errors must be sticky";
        EXPECT_FALSE(decoder.Finish().ok());
        return out;
      }
      EXPECT_GT(step->consumed, 0u);
      EXPECT_LE(step->consumed, in.size());
      out.payload.append(AsText(step->payload));
      in = in.subspan(step->consumed);
    }
  }
  out.status = decoder.Finish();
  return out;
}

// Builds a signed aws-chunked body for `sizes` (the final 0 chunk is appended) with the chain
// computed from the step functions.
std::string SignedBody(const StreamingSigner& s, const std::vector<uint64_t>& sizes, char fill) {
  std::string body;
  std::string previous = s.seed_signature;
  std::vector<uint64_t> all = sizes;
  all.push_back(0);
  for (uint64_t size : all) {
    const std::string data(size, fill);
    const std::string sts = "AWS4-HMAC-SHA256-PAYLOAD\n" + s.amz_date + "\n" + s.scope + "\n" +
                            previous + "\n" + std::string(sigv4::kEmptySha256Hex) + "\n" +
                            sigv4::Sha256Hex(data);
    previous = sigv4::SignatureHex(s.signing_key, sts);
    body += ChunkBytes(size, previous, fill);
  }
  return body;
}

TEST(AwsChunked, AuthenticateYieldsThePublishedSeed) {
  const StreamingSigner s = AwsSigner();
  EXPECT_EQ(s.seed_signature, testing::kAwsSeedSignature);
  EXPECT_EQ(s.amz_date, testing::kAwsDate);
  EXPECT_EQ(s.scope, testing::kAwsScope);
}

TEST(AwsChunked, DecodesThePublishedExampleInAnyPieceSize) {
  const std::string body = AwsBody();
  ASSERT_EQ(body.size(), testing::kAwsChunkedBodyBytes);
  for (size_t piece : {size_t{1}, size_t{2}, size_t{7}, size_t{86}, size_t{87}, size_t{88},
                       size_t{4096}, size_t{65536}, size_t{65623}, body.size()}) {
    SCOPED_TRACE(piece);
    Decoded d = Decode(AwsSigner(), 66560, body, piece);
    EXPECT_TRUE(d.status.ok()) << d.status;
    EXPECT_EQ(d.payload, std::string(66560, 'a'));
  }
}

TEST(AwsChunked, PayloadViewsPointIntoTheInput) {
  const std::string body = AwsBody();
  AwsChunkedDecoder decoder(AwsSigner(), 66560);
  ByteSpan in = AsBytes(body);
  uint64_t total = 0;
  while (!in.empty()) {
    Result<AwsChunkedDecoder::Step> step = decoder.Next(in);
    ASSERT_TRUE(step.has_value()) << step.error();
    if (!step->payload.empty()) {
      EXPECT_GE(step->payload.data(), in.data());
      EXPECT_LE(step->payload.data() + step->payload.size(), in.data() + in.size());
    }
    total += step->payload.size();
    in = in.subspan(step->consumed);
  }
  EXPECT_TRUE(decoder.done());
  EXPECT_EQ(total, 66560u);
  EXPECT_EQ(decoder.decoded_bytes(), 66560u);
}

TEST(AwsChunked, EveryPublishedSignatureIsChecked) {
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    std::string body;
    for (size_t j = 0; j < 3; ++j) {
      std::string sig(testing::kAwsChunkSignatures[j]);
      if (j == i) {
        sig[10] = sig[10] == '0' ? '1' : '0';
      }
      body += ChunkBytes(testing::kAwsChunkSizes[j], sig);
    }
    Decoded d = Decode(AwsSigner(), 66560, body, 1000);
    EXPECT_EQ(d.status.code(), Code::kUnauthenticated) << d.status;
    EXPECT_EQ(d.status.subject(), Subject::kSignature);
    EXPECT_EQ(d.status.field(), "chunk-signature");
  }
}

TEST(AwsChunked, TamperedDataOrReorderedChunksFail) {
  std::string body = AwsBody();
  body[100] = 'b';  // inside the first chunk's data
  EXPECT_EQ(Decode(AwsSigner(), 66560, body, 4096).status.code(), Code::kUnauthenticated);

  // The right signatures in the wrong order: the chain breaks.
  const std::string swapped = ChunkBytes(1024, testing::kAwsChunkSignatures[1]) +
                              ChunkBytes(65536, testing::kAwsChunkSignatures[0]) +
                              ChunkBytes(0, testing::kAwsChunkSignatures[2]);
  EXPECT_EQ(Decode(AwsSigner(), 66560, swapped, 4096).status.code(), Code::kUnauthenticated);

  // Another seed (a replay of the chunks under another request) fails on the first chunk.
  StreamingSigner other = AwsSigner();
  other.seed_signature[0] = other.seed_signature[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(Decode(other, 66560, AwsBody(), 4096).status.code(), Code::kUnauthenticated);
}

TEST(AwsChunked, TruncatedBodiesNeverFinish) {
  const std::string body = AwsBody();
  const size_t first_header = body.find("\r\n") + 2;
  std::vector<size_t> cuts = {0,
                              1,
                              first_header - 1,
                              first_header,
                              first_header + 65536,
                              first_header + 65537,
                              body.size() - 2,
                              body.size() - 1};
  for (size_t cut = 3; cut < body.size(); cut += 997) {
    cuts.push_back(cut);
  }
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    Decoded d = Decode(AwsSigner(), 66560, std::string_view(body).substr(0, cut), 333);
    EXPECT_FALSE(d.status.ok());
    if (d.status.code() == Code::kInvalidArgument) {
      EXPECT_EQ(d.status.subject(), Subject::kEntity);
    }
  }
  EXPECT_EQ(Decode(AwsSigner(), 66560, std::string_view(body).substr(0, body.size() - 1), 333)
                .status.field(),
            "x-amz-decoded-content-length");
}

TEST(AwsChunked, DecodedLengthMustMatchTheHeader) {
  const std::string body = AwsBody();
  for (uint64_t declared : {uint64_t{0}, uint64_t{65535}, uint64_t{66559}, uint64_t{66561}}) {
    SCOPED_TRACE(declared);
    Decoded d = Decode(AwsSigner(), declared, body, 4096);
    EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status;
    EXPECT_EQ(d.status.field(), "x-amz-decoded-content-length");
  }
}

TEST(AwsChunked, BadChunkHeaders) {
  const std::string sig(testing::kAwsChunkSignatures[0]);
  const size_t kFirstHeader = 5 + 17 + 64 + 2;  // "10000;chunk-signature=<sig>\r\n"
  struct Row {
    std::string what;
    std::string body;
  };
  const Row rows[] = {
      {"non-hex size", "1g;chunk-signature=" + sig + "\r\n"},
      {"empty size", ";chunk-signature=" + sig + "\r\n"},
      {"sign", "+10;chunk-signature=" + sig + "\r\n"},
      {"space", " 10;chunk-signature=" + sig + "\r\n"},
      {"17 hex digits", "00000000000010000;chunk-signature=" + sig + "\r\n"},
      {"over the chunk limit", "1000001;chunk-signature=" + sig + "\r\n"},
      {"huge", "ffffffffffffffff;chunk-signature=" + sig + "\r\n"},
      {"no extension", "10000\r\n"},
      {"other extension", "10000;chunk-signaturX=" + sig + "\r\n"},
      {"short signature", "10000;chunk-signature=" + sig.substr(1) + "\r\n"},
      {"long signature", "10000;chunk-signature=" + sig + "0\r\n"},
      {"uppercase signature", "10000;chunk-signature=AD" + sig.substr(2) + "\r\n"},
      {"bare LF", "10000;chunk-signature=" + sig + "\n"},
      {"header too long", std::string(300, '0')},
      {"no CRLF after data", ChunkBytes(65536, sig).substr(0, kFirstHeader + 65536) + "XX"},
      {"LF only after data", ChunkBytes(65536, sig).substr(0, kFirstHeader + 65536) + "\n\r"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    for (size_t piece : {size_t{1}, size_t{4096}}) {
      Decoded d = Decode(AwsSigner(), 66560, row.body, piece);
      EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status;
      EXPECT_EQ(d.status.subject(), Subject::kEntity) << d.status;
      EXPECT_EQ(d.status.field(), "aws-chunked") << d.status;
    }
  }
}

TEST(AwsChunked, ChunkLimitIsCheckedBeforeAnyDataIsAccepted) {
  const StreamingSigner s = AwsSigner();
  AwsChunkedDecoder decoder(s, kMaxAwsChunkBytes + 1);
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(kMaxAwsChunkBytes + 1));
  const std::string header = std::string(hex) +
                             ";chunk-signature=" + std::string(testing::kAwsChunkSignatures[0]) +
                             "\r\n";
  Result<AwsChunkedDecoder::Step> step = decoder.Next(AsBytes(header));
  ASSERT_FALSE(step.has_value());
  EXPECT_EQ(step.error().field(), "aws-chunked");
}

TEST(AwsChunked, BytesAfterTheFinalChunkAreRejected) {
  Decoded d = Decode(AwsSigner(), 66560, AwsBody() + "0", 4096);
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_EQ(d.status.field(), "aws-chunked");
}

TEST(AwsChunked, SelfSignedBodiesOfManyShapesRoundTrip) {
  const StreamingSigner s = AwsSigner();
  const std::vector<std::vector<uint64_t>> shapes = {
      {}, {1}, {8192}, {8192, 8192, 1}, {65536, 65536, 65536, 100}, {kMaxAwsChunkBytes}};
  for (const auto& sizes : shapes) {
    uint64_t total = 0;
    for (uint64_t n : sizes) {
      total += n;
    }
    SCOPED_TRACE(total);
    const std::string body = SignedBody(s, sizes, 'z');
    for (size_t piece : {size_t{3}, size_t{65536}, body.size() + 1}) {
      if (piece == 3 && total > 300000) {
        continue;  // byte-sized feeding of the 16 MiB chunk is slow and adds nothing
      }
      Decoded d = Decode(s, total, body, piece);
      EXPECT_TRUE(d.status.ok()) << d.status;
      EXPECT_EQ(d.payload.size(), total);
      EXPECT_EQ(d.payload, std::string(total, 'z'));
    }
  }
}

TEST(AwsChunked, EmptyObjectIsOnlyTheFinalChunk) {
  const StreamingSigner s = AwsSigner();
  Decoded d = Decode(s, 0, SignedBody(s, {}, 'a'), 1);
  EXPECT_TRUE(d.status.ok()) << d.status;
  EXPECT_TRUE(d.payload.empty());
  AwsChunkedDecoder fresh(s, 0);
  EXPECT_FALSE(fresh.Finish().ok());  // nothing received at all
}

// ---- STREAMING-UNSIGNED-PAYLOAD-TRAILER ----

// Check values: CRC RevEng catalogue ("123456789": CRC-32 0xCBF43926, CRC-32C 0xE3069283,
// CRC-64/NVME 0xAE8B14860A799888), FIPS 180 ("abc"), rendered as S3 does (base64 of the
// big-endian digest).
TEST(Checksum, KnownAnswers) {
  struct Row {
    ChecksumAlgorithm algorithm;
    std::string_view input;
    std::string_view base64;
  };
  const Row rows[] = {
      {ChecksumAlgorithm::kCrc32, "123456789", "y/Q5Jg=="},
      {ChecksumAlgorithm::kCrc32c, "123456789", "4waSgw=="},
      {ChecksumAlgorithm::kCrc64Nvme, "123456789", "rosUhgp5mIg="},
      {ChecksumAlgorithm::kSha1, "abc", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="},
      {ChecksumAlgorithm::kSha256, "abc", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="},
      {ChecksumAlgorithm::kCrc32, "", "AAAAAA=="},
      {ChecksumAlgorithm::kCrc32, "hello world", "DUoRhQ=="},  // botocore's trailer value
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(ChecksumHeaderName(row.algorithm)) + " " + std::string(row.input));
    Checksum whole(row.algorithm);
    whole.Update(AsBytes(row.input));
    EXPECT_EQ(whole.FinishBase64(), row.base64);
    Checksum pieces(row.algorithm);
    for (char c : row.input) {
      pieces.Update(AsBytes(std::string_view(&c, 1)));
    }
    EXPECT_EQ(pieces.FinishBase64(), row.base64);
  }
}

// A longer input, so the word-at-a-time paths (slice-by-8, ISA-L, zlib) run, fed whole and in
// pieces of odd sizes; values from an independent bitwise implementation (Python, zlib).
TEST(Checksum, LongInputsWholeAndInPieces) {
  std::string input(1000, '\0');
  for (size_t i = 0; i < input.size(); ++i) {
    input[i] = static_cast<char>((i * 31 + 7) % 256);
  }
  struct Row {
    ChecksumAlgorithm algorithm;
    std::string_view base64;
  };
  for (const Row& row :
       {Row{ChecksumAlgorithm::kCrc64Nvme, "hJuqFMGMbk4="},
        Row{ChecksumAlgorithm::kCrc32c, "/1Lulw=="}, Row{ChecksumAlgorithm::kCrc32, "iQIWHg=="}}) {
    SCOPED_TRACE(std::string(ChecksumHeaderName(row.algorithm)));
    Checksum whole(row.algorithm);
    whole.Update(AsBytes(input));
    EXPECT_EQ(whole.FinishBase64(), row.base64);
    for (size_t step : {1, 3, 7, 13, 64, 999}) {
      Checksum pieces(row.algorithm);
      for (size_t at = 0; at < input.size(); at += step) {
        pieces.Update(AsBytes(std::string_view(input).substr(at, step)));
      }
      EXPECT_EQ(pieces.FinishBase64(), row.base64) << "step " << step;
    }
  }
}

// S3's checksum of checksums: the algorithm over the parts' binary digests, then "-N".
TEST(Checksum, CompositeOfParts) {
  const std::string parts[] = {"7YH59g==", "OncRQw=="};  // CRC32 of "hello " and "world"
  EXPECT_EQ(CompositeChecksum(ChecksumAlgorithm::kCrc32, parts), "1Fu2mQ==-2");
  const std::string bad[] = {"7YH59g==", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="};  // a SHA1 among CRC32s
  EXPECT_FALSE(CompositeChecksum(ChecksumAlgorithm::kCrc32, bad).has_value());
  EXPECT_FALSE(CompositeChecksum(ChecksumAlgorithm::kCrc32, std::span<const std::string>()));
}

TEST(Checksum, NamesAndValues) {
  EXPECT_EQ(ChecksumFromName("crc64nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_EQ(ChecksumFromName("SHA256"), ChecksumAlgorithm::kSha256);
  EXPECT_FALSE(ChecksumFromName("MD5").has_value());
  EXPECT_EQ(ChecksumName(ChecksumAlgorithm::kCrc32c), "CRC32C");
  EXPECT_TRUE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "y/Q5Jg=="));
  EXPECT_TRUE(IsChecksumValue(ChecksumAlgorithm::kCrc64Nvme, "rosUhgp5mIg="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc64Nvme, "y/Q5Jg=="));  // 4 bytes, not 8
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "y/Q5Jg="));       // not padded
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "y/Q5J!=="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, ""));
}

TEST(Checksum, HeaderNames) {
  EXPECT_EQ(ChecksumFromHeaderName("X-Amz-Checksum-CRC32C"), ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(ChecksumFromHeaderName("x-amz-checksum-crc64nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_FALSE(ChecksumFromHeaderName("x-amz-checksum-md5").has_value());
  EXPECT_FALSE(ChecksumFromHeaderName("x-amz-checksum-crc32 ").has_value());
  EXPECT_EQ(ChecksumHeaderName(ChecksumAlgorithm::kSha256), "x-amz-checksum-sha256");
}

AuthResult TrailerAuth(uint64_t decoded, std::string trailer = "x-amz-checksum-crc32") {
  AuthResult a;
  a.payload = PayloadMode::kStreamingUnsignedTrailer;
  a.decoded_content_length = decoded;
  a.trailer = std::move(trailer);
  return a;
}

Decoded DecodeTrailer(const AuthResult& auth, std::string_view body, size_t piece) {
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
  return out;
}

// As botocore 1.43 sends "hello world" over HTTPS.
constexpr std::string_view kTrailerBody =
    "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";

TEST(AwsChunkedTrailer, DecodesAndChecksTheTrailer) {
  for (size_t piece : {size_t{1}, size_t{5}, kTrailerBody.size()}) {
    SCOPED_TRACE(piece);
    Decoded d = DecodeTrailer(TrailerAuth(11), kTrailerBody, piece);
    EXPECT_TRUE(d.status.ok()) << d.status;
    EXPECT_EQ(d.payload, "hello world");
  }
  // Several chunks, trailer name in another case, spaces around the value.
  Decoded multi =
      DecodeTrailer(TrailerAuth(11),
                    "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Amz-Checksum-Crc32: DUoRhQ== \r\n\r\n", 3);
  EXPECT_TRUE(multi.status.ok()) << multi.status;
  EXPECT_EQ(multi.payload, "hello world");
  // An empty object.
  Decoded empty = DecodeTrailer(TrailerAuth(0), "0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", 1);
  EXPECT_TRUE(empty.status.ok()) << empty.status;
}

// The verified trailer value is what the gateway stores as the object's checksum; nothing
// before the trailer was checked, and nothing after a wrong one.
TEST(AwsChunkedTrailer, ExposesTheVerifiedChecksum) {
  AwsChunkedDecoder decoder(TrailerAuth(11));
  ByteSpan in = AsBytes(kTrailerBody);
  while (!in.empty()) {
    if (AsText(in).find("x-amz-checksum-crc32:") != std::string_view::npos) {
      EXPECT_EQ(decoder.trailer_checksum(), "") << "before the trailer line was read";
    }
    Result<AwsChunkedDecoder::Step> step = decoder.Next(in);
    ASSERT_TRUE(step.has_value()) << step.error();
    in = in.subspan(step->consumed);
  }
  EXPECT_EQ(decoder.trailer_checksum(), "DUoRhQ==");
  AwsChunkedDecoder wrong(TrailerAuth(11));
  std::string body(kTrailerBody);
  body.replace(body.find("DUoRhQ=="), 8, "AAAAAA==");
  ByteSpan rest = AsBytes(body);
  Status failed;
  while (!rest.empty() && failed.ok()) {
    Result<AwsChunkedDecoder::Step> step = wrong.Next(rest);
    if (!step.has_value()) {
      failed = step.error();
    } else {
      rest = rest.subspan(step->consumed);
    }
  }
  EXPECT_EQ(failed.subject(), Subject::kDigest) << failed;
  EXPECT_EQ(wrong.trailer_checksum(), "");
}

TEST(AwsChunkedTrailer, Errors) {
  struct Row {
    std::string what;
    std::string body;
    Subject subject;
    std::string_view field;
  };
  const Row rows[] = {
      {"wrong checksum", "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n",
       Subject::kDigest, "x-amz-checksum-crc32"},
      {"changed data", "b\r\nhello World\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n",
       Subject::kDigest, "x-amz-checksum-crc32"},
      {"no trailer", "b\r\nhello world\r\n0\r\n\r\n", Subject::kDigest, "x-amz-checksum-crc32"},
      {"other trailer", "b\r\nhello world\r\n0\r\nx-amz-checksum-sha1:DUoRhQ==\r\n\r\n",
       Subject::kEntity, "aws-chunked"},
      {"repeated trailer",
       "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\nx-amz-checksum-crc32:DUoRhQ==\r\n"
       "\r\n",
       Subject::kEntity, "aws-chunked"},
      {"trailer without colon", "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32\r\n\r\n",
       Subject::kEntity, "aws-chunked"},
      {"signature extension", "b;chunk-signature=" + std::string(64, 'a') + "\r\nhello world\r\n",
       Subject::kEntity, "aws-chunked"},
      {"bare LF in trailer", "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\n\r\n",
       Subject::kEntity, "aws-chunked"},
      {"long trailer line", "b\r\nhello world\r\n0\r\n" + std::string(300, 'x'), Subject::kEntity,
       "aws-chunked"},
      {"bytes after the end", std::string(kTrailerBody) + "x", Subject::kEntity, "aws-chunked"},
      {"too long", "c\r\nhello world!\r\n0\r\n\r\n", Subject::kEntity,
       "x-amz-decoded-content-length"},
      {"truncated", std::string(kTrailerBody.substr(0, kTrailerBody.size() - 2)), Subject::kEntity,
       "x-amz-decoded-content-length"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Decoded d = DecodeTrailer(TrailerAuth(11), row.body, 4);
    EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status;
    EXPECT_EQ(d.status.subject(), row.subject) << d.status;
    EXPECT_EQ(d.status.field(), row.field) << d.status;
  }
}

TEST(AwsChunkedTrailer, AuthenticateNeedsOneKnownTrailerHeader) {
  const Credentials creds = testing::AwsCredentials();
  AuthOptions options;
  options.accept_unsigned_trailer = true;
  const Authenticator auth(creds, options);
  for (std::string_view trailer : {"", "x-amz-checksum-md5", "x-amz-checksum-crc32,x"}) {
    SCOPED_TRACE(trailer);
    testing::OwnedRequest req{"PUT", "/b/k", {{"Host", "localhost"}}};
    req.Set("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    req.Set("x-amz-decoded-content-length", "11");
    if (!trailer.empty()) {
      req.Set("x-amz-trailer", std::string(trailer));
    }
    testing::SignInPlace(&req, "20130524T000000Z");
    Result<AuthResult> r = auth.Authenticate(req.View(), AwsTime());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << r.error();
    EXPECT_EQ(r.error().field(), "x-amz-trailer");
  }
  testing::OwnedRequest ok{"PUT", "/b/k", {{"Host", "localhost"}}};
  ok.Set("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
  ok.Set("x-amz-decoded-content-length", "11");
  ok.Set("x-amz-trailer", "x-amz-checksum-CRC32C");
  testing::SignInPlace(&ok, "20130524T000000Z");
  Result<AuthResult> r = auth.Authenticate(ok.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->payload, PayloadMode::kStreamingUnsignedTrailer);
  EXPECT_EQ(r->trailer, "x-amz-checksum-crc32c");
  EXPECT_EQ(r->decoded_content_length, 11u);
}

// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: AWS's signed example chunks (the final one
// followed at once by the trailer section), the crc32 trailer and its signature over
// "x-amz-checksum-crc32:<value>\n" chained from the final chunk's signature.
TEST(AwsChunkedSignedTrailer, ChecksChunksTrailerAndTrailerSignature) {
  const StreamingSigner signer = AwsSigner();
  AuthResult auth;
  auth.payload = PayloadMode::kStreamingSignedTrailer;
  auth.streaming = signer;
  auth.decoded_content_length = 66560;
  auth.trailer = "x-amz-checksum-crc32";
  Checksum crc(ChecksumAlgorithm::kCrc32);
  crc.Update(AsBytes(std::string(66560, 'a')));
  const std::string value = crc.FinishBase64();
  std::string chunks;
  for (size_t i = 0; i < 2; ++i) {
    chunks += ChunkBytes(testing::kAwsChunkSizes[i], testing::kAwsChunkSignatures[i]);
  }
  chunks += "0;chunk-signature=" + std::string(testing::kAwsChunkSignatures[2]) + "\r\n";
  const std::string sts = "AWS4-HMAC-SHA256-TRAILER\n" + signer.amz_date + "\n" + signer.scope +
                          "\n" + std::string(testing::kAwsChunkSignatures[2]) + "\n" +
                          sigv4::DigestHex(sigv4::Sha256Of("x-amz-checksum-crc32:" + value + "\n"));
  const std::string sig = sigv4::SignatureHex(signer.signing_key, sts);
  const std::string line = "x-amz-checksum-crc32:" + value + "\r\n";
  struct Row {
    const char* what;
    std::string body;
    Code code;
    std::string_view field;
  };
  std::string bad_sig = sig;
  bad_sig[0] = bad_sig[0] == '0' ? '1' : '0';
  const Row rows[] = {
      {"good", chunks + line + "x-amz-trailer-signature:" + sig + "\r\n\r\n", Code::kOk, ""},
      {"bad signature", chunks + line + "x-amz-trailer-signature:" + bad_sig + "\r\n\r\n",
       Code::kUnauthenticated, "x-amz-trailer-signature"},
      {"no signature", chunks + line + "\r\n", Code::kUnauthenticated, "x-amz-trailer-signature"},
      {"signature first", chunks + "x-amz-trailer-signature:" + sig + "\r\n" + line + "\r\n",
       Code::kInvalidArgument, "aws-chunked"},
      {"unsigned final chunk", chunks.substr(0, chunks.rfind("0;")) + "0\r\n" + line + "\r\n",
       Code::kInvalidArgument, "aws-chunked"},
  };
  for (const Row& row : rows) {
    for (size_t piece : {size_t{1}, size_t{7}, size_t{65536}}) {
      SCOPED_TRACE(std::string(row.what) + " piece " + std::to_string(piece));
      Decoded d = DecodeTrailer(auth, row.body, piece);
      EXPECT_EQ(d.status.code(), row.code) << d.status;
      if (row.code == Code::kOk) {
        EXPECT_EQ(d.payload, std::string(66560, 'a'));
      } else {
        EXPECT_EQ(d.status.field(), row.field) << d.status;
      }
    }
  }
}

}  // namespace
}  // namespace oc::gateway::auth
