#pragma once
// The S3 checksums of multipart uploads in the gateway
// (docs/decisions/s3-checksums-multipart-in-full.md and
// docs/decisions/s3-checksums-full-object.md): CreateMultipartUpload's choice of algorithm and
// type, and the object checksum a CompleteMultipartUpload stores, COMPOSITE (the checksum of the
// listed part checksums, "-N") or FULL_OBJECT (the CRC of the whole object, combined from the
// parts' CRCs and sizes). The store compares what the gateway combined from (each listed part's
// checksum and size) with the parts it stitches, under the commit's lock, so the value stored is
// the CRC of the bytes stored. Used by multipart_handlers.cc.
// Thread safety: pure functions of their arguments and the thread-safe Store.

#include <optional>
#include <span>
#include <vector>

#include "handlers/handlers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {

// CreateMultipartUpload's x-amz-checksum-algorithm and x-amz-checksum-type, as S3 takes
// them: the type is COMPOSITE or FULL_OBJECT and needs an algorithm; without a type,
// CRC64NVME is FULL_OBJECT and every other algorithm COMPOSITE; FULL_OBJECT is only for the
// CRCs and COMPOSITE not for CRC64NVME. Sets options->upload_checksum_header and
// upload_checksum_type. Returns 400 InvalidRequest naming the header at fault otherwise.
std::optional<Response> ParseCreateUploadChecksum(const Request& req, storage::PutOptions* options);

// The part list and options of a CompleteMultipartUpload: each listed part with its checksum
// (and, for FULL_OBJECT, its size), and options->checksum, the object checksum to store. The
// upload's algorithm and type come from the store (ListParts) when the request involves
// checksums at all. Returns 400 InvalidRequest for a malformed x-amz-checksum-type or one that
// is not the upload's, 400 InvalidPart for listed checksums that cannot be combined (or a part
// that was not uploaded, for FULL_OBJECT), 400 BadDigest naming the header when an
// x-amz-checksum-<algorithm> sent with the completion is not the computed value.
std::optional<Response> PlanCompletionChecksum(HandlerEnv& env, const Request& req,
                                               std::vector<XmlPart> listed,
                                               std::vector<storage::CompletedPart>* parts,
                                               storage::CompleteOptions* options);

}  // namespace oc::gateway
