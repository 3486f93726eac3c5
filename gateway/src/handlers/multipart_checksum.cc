#include "handlers/multipart_checksum.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "oc/common/text.h"

namespace oc::gateway {
namespace {

using auth::ChecksumAlgorithm;
using storage::ChecksumType;

constexpr std::string_view kTypeHeader = "x-amz-checksum-type";
// Parts per ListParts call when the completion reads a FULL_OBJECT upload's part sizes (S3's
// page size; an upload has at most storage::kMaxPartNumber parts).
constexpr uint32_t kListPage = 1000;

// x-amz-checksum-type's value: COMPOSITE or FULL_OBJECT (any case); nullopt for any other.
std::optional<ChecksumType> ParseType(std::string_view value) {
  value = Trim(value);
  if (EqualsIgnoreCase(value, "COMPOSITE")) {
    return ChecksumType::kComposite;
  }
  if (EqualsIgnoreCase(value, "FULL_OBJECT")) {
    return ChecksumType::kFullObject;
  }
  return std::nullopt;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// What a completion needs of its upload: the algorithm and type it was created with, and
// for FULL_OBJECT every part's size and checksum (ascending by number).
struct UploadChecksums {
  std::optional<ChecksumAlgorithm> algorithm;
  ChecksumType type = ChecksumType::kComposite;
  std::vector<storage::PartInfo> parts;
};

Result<UploadChecksums> ReadUploadChecksums(HandlerEnv& env, const Request& req) {
  const storage::ObjectKey key{req.route.bucket, req.route.key};
  const std::string_view upload_id = req.Query("uploadId").value_or("");
  UploadChecksums out;
  uint32_t marker = 0;
  for (bool first = true;; first = false) {
    OC_ASSIGN_OR_RETURN(storage::ListPartsResult page,
                        env.store->ListParts(key, upload_id, marker, kListPage));
    if (first) {
      out.algorithm = auth::ChecksumFromHeaderName(page.checksum_header);
      out.type = page.checksum_type;
      if (!out.algorithm || out.type != ChecksumType::kFullObject) {
        return out;  // a COMPOSITE value needs only the listed checksums
      }
    }
    for (storage::PartInfo& p : page.parts) {
      out.parts.push_back(std::move(p));
    }
    if (!page.truncated || page.next_part_number_marker <= marker) {
      return out;
    }
    marker = page.next_part_number_marker;
  }
}

Response BadDigest(std::string_view header, std::string_view value, ChecksumAlgorithm algorithm) {
  return Response::Error(S3Error::kBadDigest, std::string(header), std::string(value),
                         fmt::format("The {} you specified did not match the calculated checksum.",
                                     Lower(auth::ChecksumName(algorithm))));
}

// Each x-amz-checksum-<algorithm> the completion sends must be of `algorithm` and equal
// `computed`; a COMPOSITE value may be sent with or without its "-N".
std::optional<Response> CheckExpected(const Request& req, ChecksumAlgorithm algorithm,
                                      std::string_view computed, ChecksumType type) {
  auto base = [type](std::string_view v) {
    return type == ChecksumType::kComposite ? v.substr(0, v.find('-')) : v;
  };
  for (const auto& [name, value] : req.headers) {
    std::optional<ChecksumAlgorithm> sent = auth::ChecksumFromHeaderName(name);
    if (sent && (*sent != algorithm || base(Trim(value)) != base(computed))) {
      return BadDigest(name, value, *sent);
    }
  }
  return std::nullopt;
}

// Any x-amz-checksum-<algorithm> sent with a completion that has nothing to compare it with:
// BadDigest, as before (the object would not carry it).
std::optional<Response> RefuseExpected(const Request& req) {
  for (const auto& [name, value] : req.headers) {
    if (std::optional<ChecksumAlgorithm> sent = auth::ChecksumFromHeaderName(name)) {
      return BadDigest(name, value, *sent);
    }
  }
  return std::nullopt;
}

storage::CompletedPart ToCompleted(XmlPart& p) {
  storage::CompletedPart part{p.part_number, std::move(p.etag), {}, std::nullopt};
  if (!p.checksum_algorithm.empty()) {
    std::optional<ChecksumAlgorithm> a = auth::ChecksumFromName(p.checksum_algorithm);
    // An element of an algorithm we do not know still reaches the store, which refuses it.
    part.checksum = {a ? std::string(auth::ChecksumHeaderName(*a))
                       : "x-amz-checksum-" + Lower(p.checksum_algorithm),
                     std::move(p.checksum)};
  }
  return part;
}

// The checksum of checksums of a completion whose parts list checksums (S3 "Using part-level
// checksums for multipart uploads"): every part must then name one of the same algorithm.
std::optional<Response> PlanComposite(const Request& req, std::vector<XmlPart>& listed,
                                      std::vector<storage::CompletedPart>* parts,
                                      storage::CompleteOptions* options) {
  const bool any = std::any_of(listed.begin(), listed.end(),
                               [](const XmlPart& p) { return !p.checksum_algorithm.empty(); });
  if (any) {
    const std::string& name = listed.front().checksum_algorithm;
    const std::optional<ChecksumAlgorithm> algorithm = auth::ChecksumFromName(name);
    std::vector<std::string> values;
    values.reserve(listed.size());
    for (const XmlPart& p : listed) {
      if (!algorithm || p.checksum_algorithm != name) {
        return Response::Error(S3Error::kInvalidPart, "Checksum" + p.checksum_algorithm,
                               std::to_string(p.part_number),
                               "Every part must list a checksum of the same algorithm.");
      }
      values.push_back(p.checksum);
    }
    std::optional<std::string> value = auth::CompositeChecksum(*algorithm, values);
    if (!value) {
      return Response::Error(S3Error::kInvalidPart, "Checksum" + name, "",
                             "A part's checksum is not the base64 of a " + name + " digest.");
    }
    if (std::optional<Response> bad =
            CheckExpected(req, *algorithm, *value, ChecksumType::kComposite)) {
      return bad;
    }
    options->checksum = {std::string(auth::ChecksumHeaderName(*algorithm)), std::move(*value)};
  } else if (std::optional<Response> bad = RefuseExpected(req)) {
    return bad;
  }
  for (XmlPart& p : listed) {
    parts->push_back(ToCompleted(p));
  }
  return std::nullopt;
}

// FULL_OBJECT: the CRC of the whole object, combined from each listed part's checksum and the
// size of the part with its number, both of which the store then compares with the part it
// stitches (CompletedPart::checksum and ::size). A part listed without a checksum of the
// upload's algorithm is passed on as listed: the store refuses it (InvalidRequest, "It was
// missing for part N"), so nothing is combined for it.
std::optional<Response> PlanFullObject(const Request& req, const UploadChecksums& upload,
                                       std::vector<XmlPart>& listed,
                                       std::vector<storage::CompletedPart>* parts,
                                       storage::CompleteOptions* options) {
  const ChecksumAlgorithm algorithm = *upload.algorithm;
  std::vector<auth::PartCrc> crcs;
  crcs.reserve(listed.size());
  bool combinable = true;
  for (XmlPart& p : listed) {
    auto it = std::lower_bound(
        upload.parts.begin(), upload.parts.end(), p.part_number,
        [](const storage::PartInfo& info, uint32_t n) { return info.part_number < n; });
    if (it == upload.parts.end() || it->part_number != p.part_number) {
      return Response::FromStatus(
          Status(Code::kInvalidArgument, Subject::kPart, "Part",
                 "part " + std::to_string(p.part_number) + " was not uploaded"),
          &req);
    }
    if (auth::ChecksumFromName(p.checksum_algorithm) != algorithm) {
      combinable = false;
    }
    storage::CompletedPart part = ToCompleted(p);
    part.size = it->size;
    parts->push_back(std::move(part));
    crcs.push_back(auth::PartCrc{parts->back().checksum.value, it->size});
  }
  if (!combinable) {
    return std::nullopt;
  }
  std::optional<std::string> value = auth::FullObjectChecksum(algorithm, crcs);
  if (!value) {
    const std::string name(auth::ChecksumName(algorithm));
    return Response::Error(S3Error::kInvalidPart, "Checksum" + name, "",
                           "A part's checksum is not the base64 of a " + name + " digest.");
  }
  if (std::optional<Response> bad =
          CheckExpected(req, algorithm, *value, ChecksumType::kFullObject)) {
    return bad;
  }
  options->checksum = {std::string(auth::ChecksumHeaderName(algorithm)), std::move(*value)};
  return std::nullopt;
}

}  // namespace

std::optional<Response> ParseCreateUploadChecksum(const Request& req,
                                                  storage::PutOptions* options) {
  const std::optional<std::string_view> algorithm_header = req.Header("x-amz-checksum-algorithm");
  std::optional<ChecksumAlgorithm> algorithm;
  if (algorithm_header) {
    algorithm = auth::ChecksumFromName(Trim(*algorithm_header));
    if (!algorithm) {
      return Response::Error(
          S3Error::kInvalidRequest, "x-amz-checksum-algorithm", std::string(*algorithm_header),
          "Checksum algorithm provided is unsupported. Please try again with any of the valid "
          "types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
    }
  }
  const std::optional<std::string_view> type_header = req.Header(kTypeHeader);
  std::optional<ChecksumType> type;
  if (type_header) {
    type = ParseType(*type_header);
    if (!type) {
      return Response::Error(S3Error::kInvalidRequest, std::string(kTypeHeader),
                             std::string(*type_header),
                             "Value for x-amz-checksum-type header is invalid.");
    }
    if (!algorithm) {
      return Response::Error(S3Error::kInvalidRequest, std::string(kTypeHeader),
                             std::string(*type_header),
                             "The x-amz-checksum-type header can only be used with the "
                             "x-amz-checksum-algorithm header.");
    }
  }
  if (!algorithm) {
    return std::nullopt;
  }
  // S3's defaults: CRC64NVME has no composite form, the other algorithms default to it.
  const ChecksumType chosen =
      type.value_or(algorithm == ChecksumAlgorithm::kCrc64Nvme ? ChecksumType::kFullObject
                                                               : ChecksumType::kComposite);
  if ((chosen == ChecksumType::kFullObject && !auth::IsCrc(*algorithm)) ||
      (chosen == ChecksumType::kComposite && algorithm == ChecksumAlgorithm::kCrc64Nvme)) {
    return Response::Error(
        S3Error::kInvalidRequest, std::string(kTypeHeader), std::string(ChecksumTypeName(chosen)),
        fmt::format("The {} checksum type cannot be used with the {} checksum "
                    "algorithm.",
                    ChecksumTypeName(chosen), Lower(auth::ChecksumName(*algorithm))));
  }
  options->upload_checksum_header = auth::ChecksumHeaderName(*algorithm);
  options->upload_checksum_type = chosen;
  return std::nullopt;
}

std::optional<Response> PlanCompletionChecksum(HandlerEnv& env, const Request& req,
                                               std::vector<XmlPart> listed,
                                               std::vector<storage::CompletedPart>* parts,
                                               storage::CompleteOptions* options) {
  parts->reserve(listed.size());
  const std::optional<std::string_view> type_header = req.Header(kTypeHeader);
  std::optional<ChecksumType> asked;
  if (type_header) {
    asked = ParseType(*type_header);
    if (!asked) {
      return Response::Error(S3Error::kInvalidRequest, std::string(kTypeHeader),
                             std::string(*type_header),
                             "Value for x-amz-checksum-type header is invalid.");
    }
  }
  const bool involves_checksums =
      asked.has_value() ||
      std::any_of(listed.begin(), listed.end(),
                  [](const XmlPart& p) { return !p.checksum_algorithm.empty(); }) ||
      std::any_of(req.headers.begin(), req.headers.end(),
                  [](const auto& h) { return auth::ChecksumFromHeaderName(h.name).has_value(); });
  if (!involves_checksums) {
    // No checksum anywhere: the store refuses it if the upload has an algorithm.
    for (XmlPart& p : listed) {
      parts->push_back(ToCompleted(p));
    }
    return std::nullopt;
  }
  Result<UploadChecksums> upload = ReadUploadChecksums(env, req);
  if (!upload.has_value()) {
    if (upload.error().code() != Code::kNotFound || upload.error().subject() != Subject::kUpload) {
      return Response::FromStatus(upload.error(), &req);
    }
    // No such upload (any more): the store answers, with the object if this retries a
    // completion that succeeded (whose checksum that completion checked), else NoSuchUpload.
    for (XmlPart& p : listed) {
      parts->push_back(ToCompleted(p));
    }
    return std::nullopt;
  }
  const bool full_object = upload->algorithm && upload->type == ChecksumType::kFullObject;
  if (asked && (!upload->algorithm || *asked != upload->type)) {
    // S3: "The upload was created using the COMPOSITE checksum mode. The complete request
    // must use the same checksum mode." ("null" for an upload created without an algorithm).
    return Response::Error(
        S3Error::kInvalidRequest, std::string(kTypeHeader), std::string(*type_header),
        fmt::format("The upload was created using the {} checksum mode. The complete request "
                    "must use the same checksum mode.",
                    upload->algorithm ? ChecksumTypeName(upload->type) : "null"));
  }
  if (full_object) {
    return PlanFullObject(req, *upload, listed, parts, options);
  }
  return PlanComposite(req, listed, parts, options);
}

}  // namespace oc::gateway
