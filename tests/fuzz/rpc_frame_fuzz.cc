// Fuzzes the storage RPC frame decoder (storage-server/src/rpc/wire.h) with arbitrary bytes
// read as a stream of frames, as a server or client would read a connection: each header is
// decoded against the hard body limit, each body decoded as its receiver would (request or
// reply per the flags). Bodies that decode as one of the structured messages must re-encode
// to exactly the same bytes (the encoding is canonical). Anything else aborts.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "rpc/wire.h"

namespace {

namespace rpc = oc::storage::rpc;

void Require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

// Decodes `body` into Fields; if that succeeds, the re-encoded body must equal it.
template <typename... Fields>
void RoundTrip(oc::ByteSpan body) {
  std::tuple<Fields...> fields;
  const oc::Status st =
      std::apply([&](Fields&... f) { return rpc::DecodeBody(body, &f...); }, fields);
  if (!st.ok()) {
    return;
  }
  std::vector<std::byte> frame;
  std::apply([&](const Fields&... f) { rpc::EncodeFrame(&frame, rpc::Op::kData, 0, 0, f...); },
             fields);
  Require(frame.size() == rpc::kHeaderBytes + body.size());
  Require(std::equal(body.begin(), body.end(), frame.begin() + rpc::kHeaderBytes));
}

void CheckBody(const rpc::FrameHeader& h, oc::ByteSpan body) {
  const oc::Status st = rpc::ValidateBody(h.op, h.flags, body);
  Require(st.ok() || st.code() == oc::Code::kInvalidArgument);
  const bool reply = (h.flags & rpc::kFlagReply) != 0;
  switch (h.op) {
    case rpc::Op::kError:
      RoundTrip<oc::Status>(body);
      break;
    case rpc::Op::kPutBegin:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, oc::storage::PutOptions>(body);
      }
      break;
    case rpc::Op::kCommit:
    case rpc::Op::kHead:
      if (reply) {
        RoundTrip<oc::storage::ObjectMeta>(body);
      }
      break;
    case rpc::Op::kGet:
      if (reply) {
        RoundTrip<rpc::GetReply>(body);
      } else {
        RoundTrip<oc::storage::ObjectKey, oc::storage::ByteRange>(body);
      }
      break;
    case rpc::Op::kList:
      if (reply) {
        RoundTrip<oc::storage::ListResult>(body);
      }
      break;
    case rpc::Op::kCopy:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, oc::storage::ObjectKey,
                  std::optional<oc::storage::PutOptions>, oc::storage::WriteConditions>(body);
      } else {
        RoundTrip<oc::storage::ObjectMeta>(body);
      }
      break;
    case rpc::Op::kCreateUpload:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, oc::storage::PutOptions>(body);
      }
      break;
    case rpc::Op::kUploadPartBegin:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, std::string, uint32_t, oc::storage::PutOptions>(body);
      }
      break;
    case rpc::Op::kCompleteUpload:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, std::string, std::vector<oc::storage::CompletedPart>,
                  oc::storage::CompleteOptions>(body);
      } else {
        RoundTrip<oc::storage::ObjectMeta>(body);
      }
      break;
    case rpc::Op::kListParts:
      if (reply) {
        RoundTrip<oc::storage::ListPartsResult>(body);
      }
      break;
    case rpc::Op::kPutHeader:
      RoundTrip<std::string, std::string>(body);
      break;
    case rpc::Op::kPutTags:
      if (!reply) {
        RoundTrip<oc::storage::ObjectKey, oc::storage::Tags>(body);
      } else {
        RoundTrip<oc::storage::ObjectMeta>(body);
      }
      break;
    case rpc::Op::kKvProbe:
    case rpc::Op::kKvGetLayers:
    case rpc::Op::kKvPutChunks:
      if (!reply) {
        RoundTrip<std::string, std::string, std::string>(body);  // bucket, descriptor, principal
      } else if (h.op == rpc::Op::kKvProbe) {
        RoundTrip<oc::storage::KvProbeResult>(body);
      } else if (h.op == rpc::Op::kKvGetLayers) {
        RoundTrip<oc::storage::KvGetReport>(body);
      } else {
        RoundTrip<oc::storage::KvPutReport>(body);
      }
      break;
    case rpc::Op::kKvPlan:
      RoundTrip<oc::storage::KvPlan>(body);
      break;
    case rpc::Op::kKvDataPlane:
      if (reply) {
        RoundTrip<oc::storage::DataPlaneInfo>(body);
      } else {
        RoundTrip<std::string>(body);
      }
      break;
    case rpc::Op::kKvLayerReady:
      RoundTrip<uint32_t>(body);
      break;
    case rpc::Op::kServerInfo:
      if (reply) {
        RoundTrip<oc::storage::StoreIdentity>(body);
      }
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::ByteSpan in(reinterpret_cast<const std::byte*>(data), size);
  while (in.size() >= rpc::kHeaderBytes) {
    rpc::FrameHeader h;
    const oc::Status st =
        rpc::DecodeHeader(in.first<rpc::kHeaderBytes>(), rpc::kMaxFrameBodyBytes, &h);
    if (!st.ok()) {
      Require(!st.field().empty());
      return 0;
    }
    Require(h.body_length <= rpc::kMaxFrameBodyBytes);
    in = in.subspan(rpc::kHeaderBytes);
    if (h.body_length > in.size()) {
      return 0;  // truncated: a reader would wait for more bytes
    }
    CheckBody(h, in.first(h.body_length));
    in = in.subspan(h.body_length);
  }
  return 0;
}
