#pragma once
// ClientOptions: where liboc_client finds the gateway, whose credentials it signs with, and
// how its data plane is set up. Plain fields; FromEnvironment() fills the usual variables.
// Thread safety: a value type.

#include <chrono>
#include <cstdint>
#include <string>

#include "oc/client/target_buffer.h"
#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::client {

struct ClientOptions {
  // The gateway, "http://host:port" (https is not supported). Environment: OC_ENDPOINT.
  // Default: "http://127.0.0.1:9000"
  std::string endpoint = "http://127.0.0.1:9000";
  // SigV4 credentials; both empty sends anonymous requests. Environment: AWS_ACCESS_KEY_ID /
  // AWS_SECRET_ACCESS_KEY, else OC_ACCESS_KEY / OC_SECRET_KEY.
  // Default: "" (anonymous)
  std::string access_key;
  std::string secret_key;
  // Region requests are signed for (the gateway's auth.region). Environment: AWS_REGION.
  // Default: "us-east-1"
  std::string region = "us-east-1";
  // Bound on every socket read or write, and on each wait for a data-plane notification.
  // Default: 60 s
  std::chrono::milliseconds timeout{60'000};
  // Hash request bodies into x-amz-content-sha256; false sends UNSIGNED-PAYLOAD (the body is
  // then protected by TCP only, as with presigned URLs) and saves a SHA-256 pass per byte.
  // Default: false
  bool sign_payload = false;
  // Idle keep-alive connections kept for reuse.
  // Default: 8
  uint32_t max_idle_connections = 8;
  // Descriptor GETs (GetLayers, GetLayersHttp) whose HTTP exchanges run at once, each on one
  // of this many worker threads; later ones wait their turn in order (up to 4096 waiting,
  // then kResourceExhausted). Threads start on demand.
  // Default: 16
  uint32_t requests_in_flight = 16;
  // How long one call keeps retrying answers of 503 SlowDown, the gateway's "nothing was
  // done, come back later" (its admission queue was full, or the request waited there past
  // the server's deadline: docs/protocol.md, "Admission"). Retries back off exponentially
  // with full jitter (a random wait in [0, min(slowdown_backoff_cap, 25 ms x 2^attempt)]), as
  // S3 SDKs do, and stop once the next wait would end past this budget; the last answer is
  // then returned. Only SlowDown is retried: the gateway sends it before any byte is read,
  // stored or delivered, so a retry cannot store or deliver twice. 0 disables retries.
  // Default: 30 s
  std::chrono::milliseconds slowdown_retry_budget{30'000};
  // The longest single backoff wait.
  // Default: 1 s
  std::chrono::milliseconds slowdown_backoff_cap{1'000};
  // Descriptors whose x-oc-* headers (as descriptor::HeaderBytes counts them) exceed this go
  // in a POST body instead of GET headers. Below the gateway's whole-header limit
  // (GatewayOptions::max_header_bytes, 16 KiB by default) with room for auth headers.
  // Default: 12 KiB
  uint64_t max_descriptor_header_bytes = 12ull << 10;
  // The data plane opened on first use (a descriptor request with a target).
  DataPlaneOptions data_plane;

  // kInvalidArgument naming the field: an endpoint that is not http://host[:port], only one
  // of the two keys, a zero timeout, a negative retry budget or a backoff cap not positive.
  Status Validate() const;
};

// Overrides `options` from the environment variables named above (those that are set).
void ApplyEnvironment(ClientOptions* options);

}  // namespace oc::client
