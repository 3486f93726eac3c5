#pragma once
// GatewayOptions: every setting of the S3 gateway (the [gateway] table of conf/*.toml).
// Plain fields with their defaults; Validate() checks them once at startup; ApplyConfig
// reads the [gateway] table over them (precedence: default < file < flag, the binary applying
// flags last). Thread safety: a value type, read-only once the server starts.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "oc/common/config.h"
#include "oc/common/status.h"

namespace oc::gateway {

// Sizing of GatewayOptions::store_threads when it is 0: Store calls mostly wait (fsync, the
// RPC), so a core keeps several busy.
inline constexpr uint32_t kStoreThreadsPerCore = 8;
inline constexpr uint32_t kMinStoreThreads = 16;
inline constexpr uint32_t kMaxStoreThreads = 1024;
inline constexpr uint32_t kMaxIoThreads = 256;

// The [lifecycle] table: the gateway's lifecycle worker (docs/decisions/lifecycle.md), which
// executes the buckets' lifecycle configurations. Every gateway runs it.
struct LifecycleOptions {
  // Length of a lifecycle "day" in seconds: an object under an Expiration Days=N rule is due N
  // such days after its mtime, rounded up to a multiple of the day since the epoch (86400: S3's
  // next midnight UTC). Tests shorten it, as RGW's rgw_lc_debug_interval does. Dates (an
  // Expiration Date) are instants and are not scaled.
  // Default: 86400
  uint64_t day_seconds = 86400;
  // How often the worker passes over the buckets with a configuration; 0 picks day_seconds / 8,
  // between 100ms and 1h (LifecycleIntervalFor). An object is gone within about one interval
  // of its due time (longer when a pass has more to do than max_objects_per_pass).
  // Default: 0 (day_seconds / 8, at most 1h)
  std::chrono::milliseconds interval{0};
  // Objects and uploads a pass looks at, at most; a pass that stops part-way continues where
  // it stopped on the next one.
  // Default: 100000
  uint64_t max_objects_per_pass = 100000;
};

// The worker's pass interval for `options` (LifecycleOptions::interval).
std::chrono::milliseconds LifecycleIntervalFor(const LifecycleOptions& options);

struct GatewayOptions {
  // Address and port to listen on ("host:port"; port 0 picks a free one, for tests).
  // Default: "127.0.0.1:9000"
  std::string listen = "127.0.0.1:9000";
  // Threads running network I/O, one io_context each; 0 takes one per core this process may
  // use (oc::UsableCores: its CPU affinity and cgroup CPU quota). IoThreadsFor() resolves it.
  // Default: 0 (one per usable core)
  uint32_t io_threads = 0;
  // Threads that run Store calls, so an I/O thread never blocks on the disk or the RPC.
  // Durable PUTs wait in fsync here: more threads let more PUTs share one WAL sync. 0 takes
  // kStoreThreadsPerCore per usable core, at least kMinStoreThreads (StoreThreadsFor()).
  // Default: 0 (8 per usable core, at least 16)
  uint32_t store_threads = 0;
  // Open connections at most. At the limit a new connection is admitted by closing the
  // oldest one still waiting for a request: first those that have sent nothing, then those
  // part-way through a request header, then kept-alive ones between requests; when every
  // connection is busy with a request, the new one is closed at once.
  // Default: 1024
  uint32_t max_connections = 1024;
  // Largest request header block; larger gets 400 RequestHeaderSectionTooLarge and a close.
  // Default: 16 KiB
  uint64_t max_header_bytes = 16 << 10;
  // Largest object (or part) body; larger gets 400 EntityTooLarge before any byte is read.
  // Default: 5 GiB (S3's single-PUT limit)
  uint64_t max_object_bytes = 5ull << 30;
  // Largest XML request body (DeleteObjects, CompleteMultipartUpload, CreateBucket).
  // Default: 2 MiB
  uint64_t max_xml_body_bytes = 2 << 20;
  // Bytes moved per step between the socket and the Store, each way; also the per-connection
  // buffer size.
  // Default: 256 KiB
  uint64_t stream_piece_bytes = 256 << 10;
  // After an error with body bytes unread, at most this many are read and discarded to keep
  // the connection; beyond it the connection is closed after the response.
  // Default: 1 MiB
  uint64_t max_drain_bytes = 1 << 20;
  // How long a kept-alive connection may wait for the first byte of its next request.
  // Default: 60s
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  // How long a request line and header block may take to arrive: from accept (TLS handshake
  // included) on a new connection, from its first byte on a kept-alive one. A client that
  // connects and sends nothing, or trickles its header (slowloris), is closed after this.
  // Default: 10s
  std::chrono::milliseconds header_timeout = std::chrono::seconds(10);
  // Limit for each body read or response write step (stream_piece_bytes or less): a body
  // must arrive at stream_piece_bytes per read_timeout at least.
  // Default: 30s
  std::chrono::milliseconds read_timeout = std::chrono::seconds(30);
  // Region reported by GetBucketLocation and required in signatures ("" accepts any).
  // Default: "us-east-1"
  std::string region = "us-east-1";
  // Virtual-host-style addressing: "<bucket>.<domain>" (flag --virtual-host-domain); path
  // style keeps working. Empty means path style only.
  // Default: ""
  std::string virtual_host_domain;
  // The credentials file (auth/credentials.h format). `objectcache serve` defaults it to
  // <data dir>/credentials.toml and creates it on first start.
  // Default: ""
  std::string credentials_file;
  // Buckets anonymous requests may read (GetObject, HeadObject, ListObjects, HeadBucket).
  // Default: []
  std::vector<std::string> public_read_buckets;
  // Extra access: "user=bucket" gives that user (by name) full access to that bucket.
  // Admin users (credentials file) may touch every bucket.
  // Default: []
  std::vector<std::string> grants;
  // TLS: both set enables HTTPS on `listen` (PEM files).
  // Default: "" (plain HTTP)
  std::string tls_cert_file;
  // Default: ""
  std::string tls_key_file;
  // Log one access line per request (op, status, bytes, us, request id) at info level.
  // Default: true
  bool access_log = true;
  // Run GET and HEAD on the I/O thread when the store can answer them from memory, and on
  // the Store pool only after a read that would wait for the disk (store.h,
  // SupportsCachedReads; docs/decisions/gateway-cached-gets-on-io-thread.md).
  // Default: true
  bool inline_cached_reads = true;
  // The [lifecycle] table.
  LifecycleOptions lifecycle;

  Status Validate() const;
};

// Reads the [gateway] and [lifecycle] tables of `config` over `options`. kInvalidArgument
// naming the key on a wrong type or bad value.
// The thread counts for configured values (0: from the usable cores, see the fields).
uint32_t IoThreadsFor(uint32_t configured);
uint32_t StoreThreadsFor(uint32_t configured);

Status ApplyConfig(const Config& config, GatewayOptions* options);

}  // namespace oc::gateway

namespace oc::gateway {

// The options as one JSON object, for /stats and the startup log, thread counts as resolved
// (IoThreadsFor, StoreThreadsFor); no secrets: the credentials file is named, never read out.
std::string ToJson(const GatewayOptions& options);

// Splits "host:port" ("[v6]:port" too). kInvalidArgument naming `field` when malformed.
Status SplitHostPort(std::string_view text, std::string_view field, std::string* host,
                     uint16_t* port);

}  // namespace oc::gateway
