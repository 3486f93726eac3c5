#pragma once
// AwsChunkedDecoder: incremental decoder for S3 streaming uploads signed with
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD (Content-Encoding: aws-chunked). Source of truth: AWS S3
// API reference, "Signature Calculations for the Authorization Header: Transferring Payload
// in Multiple Chunks (Chunked Upload) (AWS Signature Version 4)". The body is a sequence of
//   hex(size) ";chunk-signature=" sig(64 hex) CRLF  data(size bytes)  CRLF
// ending with a chunk of size 0 (its data empty, still followed by CRLF). Each chunk's
// signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD\n" date "\n" scope "\n"
// previous signature "\n" hex(sha256("")) "\n" hex(sha256(data))), the first "previous" being
// the seed signature of the Authorization header.
//
// STREAMING-UNSIGNED-PAYLOAD-TRAILER (boto3 >= 1.36 and other SDKs over HTTPS) uses the same
// framing without signatures, "hex(size) CRLF data CRLF", and after the final "0" CRLF a
// trailer section of "name:value" CRLF lines ended by an empty line; the one trailer named by
// x-amz-trailer (an x-amz-checksum-*) is checked against the payload. Source: AWS S3 API
// reference, "Signature calculations for trailing headers (chunked uploads)".
//
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER signs both: chunks as in the first mode, the
// final chunk "0;chunk-signature=" sig CRLF followed at once by the trailer section, whose
// checksum line is followed by "x-amz-trailer-signature:" sig(64 hex) CRLF and the empty line.
// The trailer signature is HMAC(signing key, "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope
// "\n" final chunk's signature "\n" hex(sha256(trailer lines as "name:value\n"))).
//
// Memory: no body buffering. Payload bytes are handed back as views into the caller's input
// as they arrive, hashed on the way, and the chunk's signature is checked when its last byte
// has been seen. So bytes of a chunk are returned BEFORE that chunk is verified: the caller
// may stream them into an ObjectWriter but must Commit only after Finish() returns OK (an
// uncommitted writer discards everything). Only the chunk header line is copied (bounded by
// kMaxAwsChunkHeaderBytes).
//
// ERRORS (map in the gateway's ToS3Error):
//   SignatureDoesNotMatch  403  kUnauthenticated   kSignature  "chunk-signature"
//                                                                 "x-amz-trailer-signature"
//     (signed-trailer mode: the trailer signature differs or is missing)
//   BadDigest              400  kInvalidArgument   kDigest     "x-amz-checksum-<algorithm>"
//     (unsigned-trailer mode: the trailer checksum differs from the payload's, or is missing)
//   IncompleteBody         400  kInvalidArgument   kEntity     "x-amz-decoded-content-length"
//     (body ended early, or the decoded length differs from x-amz-decoded-content-length)
//   InvalidRequest         400  kInvalidArgument   kEntity     "aws-chunked"
//     (malformed framing: bad hex size, missing ";chunk-signature=", bad CRLF, a chunk size
//      over kMaxAwsChunkBytes, a header over kMaxAwsChunkHeaderBytes, bytes after the end,
//      an unexpected or repeated trailer)
// After an error, every further call returns the same error.
//
// Thread safety: one decoder per request, used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "auth/checksum.h"
#include "auth/sigv4.h"
#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/sigv4/crypto.h"

namespace oc::gateway::auth {

// Longest chunk header line accepted, CRLF included: 16 hex digits + ";chunk-signature=" +
// 64 hex = 97 bytes, with room to spare. Longer lines are rejected before more is buffered.
inline constexpr size_t kMaxAwsChunkHeaderBytes = 256;
// Largest chunk size accepted (clients use 8 KiB..1 MiB; AWS SDKs at most a few MiB).
// Larger declared sizes are rejected before any byte of the chunk is accepted.
inline constexpr uint64_t kMaxAwsChunkBytes = uint64_t{16} << 20;

class AwsChunkedDecoder {
 public:
  // `signer` from AuthResult::streaming; `decoded_content_length` from
  // AuthResult::decoded_content_length (x-amz-decoded-content-length).
  AwsChunkedDecoder(StreamingSigner signer, uint64_t decoded_content_length);
  // For the streaming modes of an AuthResult: kStreamingSigned, kStreamingUnsignedTrailer or
  // kStreamingSignedTrailer. REQUIRES: auth.payload is one of those (IsAwsChunked).
  explicit AwsChunkedDecoder(const AuthResult& auth);

  struct Step {
    size_t consumed = 0;  // bytes of the input used; > 0 whenever the input was not empty
    ByteSpan payload;     // decoded bytes: a sub-span of the input (may be empty)
  };
  // Consumes a prefix of `input` and returns the payload bytes found in it. Call again with
  // the rest of the input until it is used up, then with the next piece of the body.
  // Errors as listed above.
  Result<Step> Next(ByteSpan input);

  // Call when the body has ended (Content-Length reached or connection closed). OK only if the
  // final chunk was received and verified and the decoded length matched.
  Status Finish() const;

  // True once the final chunk and its CRLF were consumed and verified.
  bool done() const { return state_ == State::kDone; }
  // The trailer's x-amz-checksum-* value once verified (trailer modes), else empty:
  // what the object's stored checksum is when it came as a trailer.
  const std::string& trailer_checksum() const { return trailer_checksum_; }
  uint64_t decoded_bytes() const { return decoded_; }

 private:
  enum class State { kHeader, kData, kDataCrlf, kTrailer, kDone, kFailed };

  Status Fail(Status status);
  Status ParseHeader();   // header_ holds one line without CRLF
  Status VerifyChunk();   // at the end of a chunk's data
  Status EndOfData();     // after a chunk's data (signed) or the final header (unsigned)
  Status ParseTrailer();  // header_ holds one trailer line without CRLF
  Status VerifyTrailer(std::string_view signature);  // x-amz-trailer-signature's value
  // Appends `in` to header_ up to and including the first '\n'; sets *complete when the line
  // ended (CRLF removed). Returns the bytes taken, or a framing error.
  Result<size_t> ReadLine(std::string_view in, bool* complete);

  StreamingSigner signer_;
  uint64_t expected_total_;
  uint64_t decoded_ = 0;
  State state_ = State::kHeader;
  std::string header_;              // the header line so far
  uint64_t chunk_size_ = 0;         // of the current chunk
  uint64_t chunk_remaining_ = 0;    // data bytes still to come
  size_t crlf_seen_ = 0;            // bytes of the CRLF after the data seen so far
  std::string chunk_signature_;     // claimed signature of the current chunk
  std::string previous_signature_;  // the chain
  sigv4::Sha256 chunk_hash_;
  // Chunks carry signatures (every mode but unsigned-trailer).
  bool signed_ = true;
  // Set in the trailer modes: the payload checksum the trailer must carry.
  std::optional<Checksum> checksum_;
  bool trailer_seen_ = false;
  // Signed-trailer mode: "name:value\n" of the trailer lines, which the trailer signature
  // covers, and whether that signature came and matched.
  std::string canonical_trailer_;
  bool trailer_signature_seen_ = false;
  std::string trailer_checksum_;
  Status error_;
};

}  // namespace oc::gateway::auth
