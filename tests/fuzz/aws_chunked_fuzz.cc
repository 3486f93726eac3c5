// libFuzzer target for AwsChunkedDecoder. The first byte picks a mode:
//  even: the rest is a raw aws-chunked body, fed in pseudo-random pieces to the signed
//        decoder (bit 1 clear) or the unsigned-trailer decoder with a CRC32 trailer (bit 1
//        set); must not crash and must never emit more than x-amz-decoded-content-length bytes.
//  odd:  the rest describes chunk sizes and one optional corruption; the harness builds a
//        correctly signed body, corrupts it (or not), and feeds it in pseudo-random pieces.
//        An uncorrupted body must decode to exactly its payload; a corrupted one must not.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "auth/aws_chunked.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace {

namespace auth = oc::gateway::auth;
namespace sigv4 = oc::sigv4;

const auth::StreamingSigner& Signer() {
  static const auth::StreamingSigner signer{
      sigv4::DeriveSigningKey("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1",
                              "s3"),
      "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
      "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"};
  return signer;
}

struct Prng {
  uint64_t s;
  uint64_t Next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return s >> 33;
  }
};

// Feeds `body` in pieces; returns OK and the payload, or the first error.
oc::Status Feed(std::string_view body, uint64_t declared, uint64_t seed, std::string* payload,
                auth::PayloadMode mode = auth::PayloadMode::kStreamingSigned) {
  auth::AuthResult result;
  result.payload = mode;
  result.streaming = Signer();
  result.decoded_content_length = declared;
  result.trailer = "x-amz-checksum-crc32";
  auth::AwsChunkedDecoder decoder(result);
  Prng prng{seed};
  while (!body.empty()) {
    const size_t piece = 1 + prng.Next() % (prng.Next() % 2 ? 7 : 70000);
    oc::ByteSpan in = oc::AsBytes(body.substr(0, std::min(piece, body.size())));
    body.remove_prefix(in.size());
    while (!in.empty()) {
      oc::Result<auth::AwsChunkedDecoder::Step> step = decoder.Next(in);
      if (!step.has_value()) {
        return step.error();
      }
      if (step->consumed == 0 || step->consumed > in.size()) {
        std::abort();  // no progress, or consumed past the input
      }
      payload->append(oc::AsText(step->payload));
      if (payload->size() > declared) {
        std::abort();  // emitted more than the declared decoded length
      }
      in = in.subspan(step->consumed);
    }
  }
  return decoder.Finish();
}

std::string Chunk(uint64_t size, const std::string& sig, char fill) {
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(size));
  return std::string(hex) + ";chunk-signature=" + sig + "\r\n" + std::string(size, fill) + "\r\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) {
    return 0;
  }
  const uint8_t mode = data[0];
  const uint64_t seed = data[1] | (uint64_t{data[2]} << 8);
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  if ((mode & 1) == 0) {
    // Declared length: small values or the AWS example's, picked by the mode byte.
    const uint64_t declared = (mode >> 2) % 4 == 0 ? 66560 : (mode >> 2) * 97;
    std::string payload;
    // Bit 1: a checksum trailer follows, signed (with its x-amz-trailer-signature) when bit 7
    // is set too.
    const auth::PayloadMode payload_mode = (mode & 2) == 0 ? auth::PayloadMode::kStreamingSigned
                                           : (mode & 128) != 0
                                               ? auth::PayloadMode::kStreamingSignedTrailer
                                               : auth::PayloadMode::kStreamingUnsignedTrailer;
    (void)Feed(rest, declared, seed, &payload, payload_mode);
    return 0;
  }
  // Structured: pairs of bytes give chunk sizes (< 4096 each, up to 8 chunks); then an
  // optional corruption position (2 bytes) and value (1 byte).
  std::vector<uint64_t> sizes;
  while (rest.size() >= 2 && sizes.size() < 8 && rest[0] != '\0') {
    sizes.push_back((static_cast<uint8_t>(rest[0]) << 4 | static_cast<uint8_t>(rest[1])) % 4096);
    rest.remove_prefix(2);
  }
  if (!rest.empty()) {
    rest.remove_prefix(1);  // the '\0' terminator
  }
  std::string body;
  std::string expected;
  std::string previous = Signer().seed_signature;
  sizes.push_back(0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const char fill = static_cast<char>('a' + i % 26);
    const std::string chunk_data(sizes[i], fill);
    const std::string sts =
        "AWS4-HMAC-SHA256-PAYLOAD\n" + Signer().amz_date + "\n" + Signer().scope + "\n" + previous +
        "\n" + std::string(sigv4::kEmptySha256Hex) + "\n" + sigv4::Sha256Hex(chunk_data);
    previous = sigv4::SignatureHex(Signer().signing_key, sts);
    body += Chunk(sizes[i], previous, fill);
    expected += chunk_data;
  }
  bool corrupted = false;
  if (rest.size() >= 3) {
    const size_t pos =
        (static_cast<uint8_t>(rest[0]) << 8 | static_cast<uint8_t>(rest[1])) % (body.size() + 1);
    if (pos == body.size()) {
      body.pop_back();  // truncation
      corrupted = true;
    } else if (body[pos] != rest[2]) {
      body[pos] = rest[2];
      corrupted = true;
    }
  }
  std::string payload;
  oc::Status s = Feed(body, expected.size(), seed, &payload);
  if (!corrupted && (!s.ok() || payload != expected)) {
    std::abort();  // a correct body was refused or mangled
  }
  if (corrupted && s.ok()) {
    // A change that still decodes must be one the format cannot see: hex case in the size
    // ("a" vs "A") or a leading zero digit. Anything else is a verification hole.
    if (payload != expected) {
      std::abort();
    }
  }
  return 0;
}
