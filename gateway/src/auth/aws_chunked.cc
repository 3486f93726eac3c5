#include "auth/aws_chunked.h"

#include <algorithm>
#include <utility>

#include "oc/common/check.h"
#include "oc/common/text.h"

namespace oc::gateway::auth {
namespace {

constexpr std::string_view kSignaturePrefix = ";chunk-signature=";
constexpr std::string_view kTrailerSignatureName = "x-amz-trailer-signature";
constexpr size_t kSignatureHexChars = 2 * sigv4::kSha256Bytes;
constexpr size_t kMaxSizeHexDigits = 16;

Status Framing(std::string message) {
  return Status(Code::kInvalidArgument, Subject::kEntity, "aws-chunked", std::move(message));
}

Status LengthMismatch(std::string message) {
  return Status(Code::kInvalidArgument, Subject::kEntity, "x-amz-decoded-content-length",
                std::move(message));
}

}  // namespace

AwsChunkedDecoder::AwsChunkedDecoder(StreamingSigner signer, uint64_t decoded_content_length)
    : signer_(std::move(signer)),
      expected_total_(decoded_content_length),
      previous_signature_(signer_.seed_signature) {
  header_.reserve(kMaxAwsChunkHeaderBytes);
}

AwsChunkedDecoder::AwsChunkedDecoder(const AuthResult& auth)
    : AwsChunkedDecoder(auth.streaming, auth.decoded_content_length) {
  OC_CHECK(IsAwsChunked(auth.payload));
  signed_ = IsSignedStreaming(auth.payload);
  if (auth.payload != PayloadMode::kStreamingSigned) {
    const std::optional<ChecksumAlgorithm> algorithm = ChecksumFromHeaderName(auth.trailer);
    OC_CHECK(algorithm.has_value());  // Authenticate validated x-amz-trailer
    checksum_.emplace(*algorithm);
  }
}

Status AwsChunkedDecoder::Fail(Status status) {
  state_ = State::kFailed;
  error_ = status;
  return status;
}

Result<size_t> AwsChunkedDecoder::ReadLine(std::string_view in, bool* complete) {
  const size_t nl = in.find('\n');
  const size_t take = nl == std::string_view::npos ? in.size() : nl + 1;
  if (header_.size() + take > kMaxAwsChunkHeaderBytes) {
    return Framing("chunk header or trailer line too long");
  }
  header_.append(in.substr(0, take));
  *complete = nl != std::string_view::npos;
  if (*complete) {
    if (header_.size() < 2 || header_[header_.size() - 2] != '\r') {
      return Framing("chunk header and trailer lines must end with CRLF");
    }
    header_.resize(header_.size() - 2);
  }
  return take;
}

Status AwsChunkedDecoder::ParseHeader() {
  // Signed: hex(size) ";chunk-signature=" 64 lowercase hex. Unsigned: hex(size) alone.
  const std::string_view line = header_;
  const size_t semi = line.find(';');
  const std::string_view hex = line.substr(0, semi);
  if (hex.empty() || hex.size() > kMaxSizeHexDigits) {
    return Framing("chunk size must be 1..16 hex digits");
  }
  uint64_t size = 0;
  for (char c : hex) {
    const int d = HexDigit(c);
    if (d < 0) {
      return Framing("chunk size is not hex");
    }
    size = (size << 4) | static_cast<uint64_t>(d);
    if (size > kMaxAwsChunkBytes) {  // checked per digit, so the shift cannot overflow
      return Framing("chunk size over the limit of " + std::to_string(kMaxAwsChunkBytes));
    }
  }
  if (!signed_) {
    if (semi != std::string_view::npos) {
      return Framing("unsigned chunks carry no extension");
    }
  } else {
    if (semi == std::string_view::npos) {
      return Framing("chunk header without ;chunk-signature=");
    }
    const std::string_view ext = line.substr(semi);
    if (!ext.starts_with(kSignaturePrefix) ||
        ext.size() != kSignaturePrefix.size() + kSignatureHexChars) {
      return Framing("chunk header must be <hex size>;chunk-signature=<64 hex>");
    }
    const std::string_view sig = ext.substr(kSignaturePrefix.size());
    if (!std::all_of(sig.begin(), sig.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
      return Framing("chunk signature must be lowercase hex");
    }
    chunk_signature_.assign(sig);
  }
  if (size > expected_total_ - decoded_) {
    return LengthMismatch("chunks carry more bytes than x-amz-decoded-content-length");
  }
  if (size == 0 && decoded_ != expected_total_) {
    return LengthMismatch("final chunk before x-amz-decoded-content-length bytes were sent");
  }
  chunk_size_ = size;
  chunk_remaining_ = size;
  chunk_hash_.Reset();
  return Status::Ok();
}

Status AwsChunkedDecoder::VerifyChunk() {
  std::string sts;
  sts.reserve(200 + signer_.scope.size());
  sts.append("AWS4-HMAC-SHA256-PAYLOAD\n");
  sts.append(signer_.amz_date).push_back('\n');
  sts.append(signer_.scope).push_back('\n');
  sts.append(previous_signature_).push_back('\n');
  sts.append(sigv4::kEmptySha256Hex).push_back('\n');
  sts.append(sigv4::DigestHex(chunk_hash_.Finish()));
  if (!sigv4::ConstantTimeEquals(sigv4::SignatureHex(signer_.signing_key, sts), chunk_signature_)) {
    return Status(Code::kUnauthenticated, Subject::kSignature, "chunk-signature",
                  "chunk signature does not match at decoded offset " +
                      std::to_string(decoded_ - chunk_size_));
  }
  previous_signature_ = chunk_signature_;
  return Status::Ok();
}

Status AwsChunkedDecoder::EndOfData() {
  if (signed_) {
    OC_RETURN_IF_ERROR(VerifyChunk());
  }
  if (checksum_ && chunk_size_ == 0) {
    state_ = State::kTrailer;  // the final chunk's header is followed by the trailer section
    return Status::Ok();
  }
  crlf_seen_ = 0;
  state_ = State::kDataCrlf;
  return Status::Ok();
}

Status AwsChunkedDecoder::ParseTrailer() {
  const std::string_view line = header_;
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return Framing("trailer line without ':'");
  }
  const std::string_view name = line.substr(0, colon);
  if (signed_ && EqualsIgnoreCase(name, kTrailerSignatureName)) {
    return VerifyTrailer(Trim(line.substr(colon + 1)));
  }
  if (trailer_signature_seen_) {
    return Framing("trailer line after x-amz-trailer-signature");
  }
  const std::optional<ChecksumAlgorithm> algorithm = ChecksumFromHeaderName(name);
  if (!algorithm || *algorithm != checksum_->algorithm()) {
    return Framing("unexpected trailer; x-amz-trailer named another");
  }
  if (trailer_seen_) {
    return Framing("repeated trailer");
  }
  trailer_seen_ = true;
  const std::string_view value = Trim(line.substr(colon + 1));
  canonical_trailer_.append(ChecksumHeaderName(*algorithm)).append(":").append(value).append("\n");
  std::string computed = checksum_->FinishBase64();
  if (value != computed) {
    return Status(Code::kInvalidArgument, Subject::kDigest,
                  std::string(ChecksumHeaderName(*algorithm)),
                  "the trailer checksum does not match the payload");
  }
  trailer_checksum_ = std::move(computed);
  return Status::Ok();
}

Status AwsChunkedDecoder::VerifyTrailer(std::string_view signature) {
  const Status mismatch(Code::kUnauthenticated, Subject::kSignature,
                        std::string(kTrailerSignatureName), "the trailer signature does not match");
  if (trailer_signature_seen_ || !trailer_seen_) {
    return Framing("x-amz-trailer-signature must follow the checksum trailer, once");
  }
  trailer_signature_seen_ = true;
  std::string sts;
  sts.reserve(200 + signer_.scope.size());
  sts.append("AWS4-HMAC-SHA256-TRAILER\n");
  sts.append(signer_.amz_date).push_back('\n');
  sts.append(signer_.scope).push_back('\n');
  sts.append(previous_signature_).push_back('\n');
  sts.append(sigv4::DigestHex(sigv4::Sha256Of(canonical_trailer_)));
  if (signature.size() != kSignatureHexChars ||
      !sigv4::ConstantTimeEquals(sigv4::SignatureHex(signer_.signing_key, sts), signature)) {
    return mismatch;
  }
  return Status::Ok();
}

Result<AwsChunkedDecoder::Step> AwsChunkedDecoder::Next(ByteSpan input) {
  Step step;
  if (state_ == State::kFailed) {
    return error_;
  }
  if (input.empty()) {
    return step;
  }
  const std::string_view in(reinterpret_cast<const char*>(input.data()), input.size());
  switch (state_) {
    case State::kHeader: {
      bool complete = false;
      Result<size_t> took = ReadLine(in, &complete);
      if (!took.has_value()) {
        return Fail(took.error());
      }
      step.consumed = *took;
      if (!complete) {
        return step;
      }
      if (Status s = ParseHeader(); !s.ok()) {
        return Fail(std::move(s));
      }
      header_.clear();
      state_ = State::kData;
      if (chunk_remaining_ == 0) {  // the final chunk: no data
        if (Status s = EndOfData(); !s.ok()) {
          return Fail(std::move(s));
        }
      }
      return step;
    }
    case State::kData: {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(chunk_remaining_, in.size()));
      step.payload = input.first(take);
      step.consumed = take;
      if (checksum_) {
        checksum_->Update(step.payload);
      }
      if (signed_) {
        chunk_hash_.Update(step.payload);
      }
      chunk_remaining_ -= take;
      decoded_ += take;
      if (chunk_remaining_ == 0) {
        if (Status s = EndOfData(); !s.ok()) {
          return Fail(std::move(s));
        }
      }
      return step;
    }
    case State::kDataCrlf: {
      while (step.consumed < in.size() && crlf_seen_ < 2) {
        const char want = crlf_seen_ == 0 ? '\r' : '\n';
        if (in[step.consumed] != want) {
          return Fail(Framing("chunk data must be followed by CRLF"));
        }
        ++crlf_seen_;
        ++step.consumed;
      }
      if (crlf_seen_ == 2) {
        state_ = chunk_size_ == 0 ? State::kDone : State::kHeader;
      }
      return step;
    }
    case State::kTrailer: {
      bool complete = false;
      Result<size_t> took = ReadLine(in, &complete);
      if (!took.has_value()) {
        return Fail(took.error());
      }
      step.consumed = *took;
      if (!complete) {
        return step;
      }
      if (header_.empty()) {  // the empty line ends the trailer section
        if (!trailer_seen_) {
          return Fail(Status(Code::kInvalidArgument, Subject::kDigest,
                             std::string(ChecksumHeaderName(checksum_->algorithm())),
                             "the trailer named by x-amz-trailer was not sent"));
        }
        if (signed_ && !trailer_signature_seen_) {
          return Fail(Status(Code::kUnauthenticated, Subject::kSignature,
                             std::string(kTrailerSignatureName),
                             "a signed trailer needs x-amz-trailer-signature"));
        }
        state_ = State::kDone;
        return step;
      }
      if (Status s = ParseTrailer(); !s.ok()) {
        return Fail(std::move(s));
      }
      header_.clear();
      return step;
    }
    case State::kDone:
      return Fail(Framing("bytes after the final chunk"));
    case State::kFailed:
      break;
  }
  return error_;
}

Status AwsChunkedDecoder::Finish() const {
  if (state_ == State::kDone) {
    return Status::Ok();
  }
  if (state_ == State::kFailed) {
    return error_;
  }
  return LengthMismatch("body ended before the final aws-chunked chunk");
}

}  // namespace oc::gateway::auth
