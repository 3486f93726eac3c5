#pragma once
// Store owns buckets and objects. The gateway sees only this interface; OpenStore()
// (open_store.h, target oc_storage_open) backs it with a backend in process (RocksDB or RADOS)
// with the KV engine composed over it, ConnectRemoteStore() (remote_store.h, target
// oc_storage_rpc_client) with the storage RPC to one or more oc-storage-server daemons. Both behave
// identically, and tests run both. The descriptor calls below are the KV engine's (src/kv/) in a
// local store and forwarded whole to the storage server by a remote one; how the engine reads a
// backend's bytes is internal (src/kv/slice_source.h).
//
// Visibility and durability: an object appears only whole, when its writer commits; an
// overwrite replaces it atomically; a reader sees one version from open to close even if
// the object is overwritten or deleted meanwhile (on RADOS: for RadosOptions::gc_min_wait
// after the overwrite; a reader whose version was also collected gets
// kFailedPrecondition/kKey). Commit returns only once the object is on stable storage.
//
// Thread safety: every Store method may be called concurrently from any thread. A writer
// or reader object is used by one thread at a time.
//
// Errors common to every method: kNotFound/kBucket when the bucket does not exist,
// kInvalidArgument/kKey (field "key") for a key over kMaxKeyBytes or empty, kIOError or
// kCorruption from the engine, kUnavailable from a remote store that cannot be reached.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/executor.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"
#include "oc/storage/types.h"

namespace oc::storage {

// Streams the bytes of a new object (or part). Nothing is visible until Commit succeeds;
// destroying a writer without Commit discards what was appended.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  // Appends bytes. The store keeps only a bounded amount in memory (one extent batch),
  // whatever the object's size.
  virtual Status Append(ByteSpan data) = 0;
  // The lend API: the writer lends memory for the object's next bytes, the caller fills it in
  // place (the gateway's HTTP parser writes a body straight into it) and hands it back with
  // Appended, saving the copy Append would make (docs/decisions/put-copies-lent-buffers.md).
  // AppendSpace returns writable space of at least min(min_bytes, max_bytes) and at most
  // max_bytes bytes, owned by the writer and valid until Appended or the writer's
  // destruction; nothing of it is part of the object until Appended. A writer that fills an
  // extent buffer lends its free tail when that holds min_bytes; the default (and such a
  // writer when the tail is shorter) lends a scratch buffer of the writer's that Appended
  // passes to Append, so every writer takes the calls. Errors: those Append would return now
  // (a spent or failed writer); kFailedPrecondition if a lend is already outstanding;
  // kInvalidArgument if max_bytes is 0.
  // REQUIRES: no other call on the writer until Appended (a writer lending its own buffer
  // refuses Append then with kFailedPrecondition; the default cannot tell).
  virtual Result<MutableByteSpan> AppendSpace(uint64_t min_bytes, uint64_t max_bytes);
  // Appends the first n bytes of the space AppendSpace lent, exactly as Append(those bytes)
  // would (digests, sizes, extents written as they fill); n may be 0. Ends the lend whatever
  // the outcome. kFailedPrecondition if no lend is outstanding or n exceeds it.
  virtual Status Appended(uint64_t n);
  // Adds a stored header (as PutOptions::headers) whose value is known only once the body
  // has been read: an S3 checksum that came as an aws-chunked trailer. Call before Commit.
  // A part writer keeps an x-amz-checksum-* header as the part's checksum (PartInfo) and
  // ignores any other. kUnimplemented from a writer that cannot (a descriptor PUT's chunk pipe).
  virtual Status AddHeader(std::string name, std::string value) {
    (void)name;
    (void)value;
    return Status::Unimplemented("this writer takes no headers after Put");
  }
  // Makes the object visible and durable; returns its metadata (size, ETag, mtime).
  // kInvalidArgument/kEntity if expected_size was set and not met; kInvalidArgument/kDigest
  // if content_md5 was set and differs. After Commit (either outcome) the writer is spent.
  virtual Result<ObjectMeta> Commit() = 0;

 private:
  // The default lend: scratch memory (grown to the largest max_bytes asked) and the
  // outstanding lend's size.
  std::unique_ptr<std::byte[]> scratch_;
  uint64_t scratch_bytes_ = 0;
  std::optional<uint64_t> scratch_lent_;
};

// Writes several new objects of one bucket that become visible together (a descriptor PUT's
// N chunks; docs/decisions/kv-descriptor-put-all-or-nothing.md). Objects are written
// one after the other: Begin() starts the next one, Append() streams its bytes, which the
// store writes out as they come under fresh internal ids, invisible to readers and holding
// only a bounded amount in memory whatever the group's size. Commit() makes every object
// visible and durable in one atomic step, each replacing its earlier version: readers and a
// crash see all of them or none. Destroying the group without a successful Commit discards
// every byte written; what a crash leaves behind is never visible and is freed at the store's
// next open.
// RADOS (no atomic write across objects) commits per index shard: the objects of one shard
// appear together in one op, shard after shard, only after every object was written and
// checked. So a refused group (a size or digest check, a write or source error, a dropped
// group) stores nothing; but a crash, or an engine error on one shard's op, between two shard
// commits leaves the objects of the shards already committed visible, each whole, and the
// others not (their data then waits for the orphan scrub). A descriptor GET serves only the
// present prefix of such chunks.
class ObjectGroupWriter {
 public:
  virtual ~ObjectGroupWriter() = default;
  // Starts object `name` (ending the previous one; see Commit for its checks).
  // kInvalidArgument/kKey for a bad name; kInvalidArgument/kEntity if the previous object's
  // expected_size was not met.
  virtual Status Begin(std::string_view name, const PutOptions& options) = 0;
  // Appends bytes to the object Begin started. REQUIRES: Begin was called.
  virtual Status Append(ByteSpan data) = 0;
  // Makes every object visible and durable; returns each one's outcome in Begin order.
  // An object begun with PutOptions::if_none_match whose key exists at this commit is not
  // written: the key keeps its object, reported with existed = true; the check and the other
  // objects' writes are one atomic step (on RADOS: per index shard, as above), so of several
  // groups racing for an absent key exactly one writes it.
  // kInvalidArgument/kEntity if an object's expected_size was not met, kInvalidArgument/kDigest
  // if its content_md5 differs, kNotFound/kBucket if the bucket was deleted meanwhile; on
  // these nothing became visible. After Commit (either outcome) the group is spent. A name
  // given twice keeps its last object (both entries report the key's outcome's `existed`).
  virtual Result<std::vector<GroupCommitted>> Commit() = 0;
};

// Reads a resolved byte range of one version of an object.
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual const ObjectMeta& meta() const = 0;
  // The resolved range: offset and length within the object, clamped to its size.
  virtual uint64_t offset() const = 0;
  virtual uint64_t length() const = 0;
  // Copies the next bytes of the range into `out`; returns how many (0 at the end).
  virtual Result<uint64_t> Read(MutableByteSpan out) = 0;
  // The next bytes of the range (at most `max`, at least one unless at the end) without a
  // copy: the reader's own memory (a pinned cache block, a mapping), valid until the next
  // call on the reader or its destruction. Empty if this reader cannot lend; Read then.
  virtual Result<ByteSpan> Lend(uint64_t max) {
    (void)max;
    return ByteSpan();
  }
};

class Store {
 public:
  virtual ~Store() = default;

  // --- Buckets ---
  // kAlreadyExists/kBucket if it exists (whoever owns it); kInvalidArgument/kBucket for a
  // name that is not a valid S3 bucket name.
  virtual Status CreateBucket(std::string_view bucket, std::string_view owner) = 0;
  // kFailedPrecondition/kBucket if it still holds objects. Unfinished multipart uploads do not
  // count (S3 counts only objects): they are aborted with the bucket, their parts freed.
  virtual Status DeleteBucket(std::string_view bucket) = 0;
  virtual Result<BucketInfo> HeadBucket(std::string_view bucket) = 0;
  // Every bucket, sorted by name.
  virtual Result<std::vector<BucketInfo>> ListBuckets() = 0;
  // The bucket's lifecycle configuration (docs/decisions/lifecycle.md): the gateway validates
  // it and hands its canonical form, which the store keeps as opaque bytes, replacing any
  // earlier one, atomically with respect to DeleteBucket (it goes with the bucket). ""
  // removes it. kInvalidArgument/kBucket (field "lifecycle") over kMaxLifecycleConfigBytes.
  virtual Status SetBucketLifecycle(std::string_view bucket, std::string_view config) = 0;
  // The configuration last set, "" when the bucket has none.
  virtual Result<std::string> GetBucketLifecycle(std::string_view bucket) = 0;

  // --- Objects ---
  // Starts writing `key`; the bucket must exist now (and again at Commit).
  virtual Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                                    const PutOptions& options) = 0;
  // Opens `range` of `key`. kNotFound/kKey if absent; kOutOfRange/kRange if the range starts
  // at or past the end of a non-empty object (a suffix range never does). A range running
  // past the end is clamped. Any range of an empty object reads zero bytes.
  virtual Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) = 0;
  virtual Result<ObjectMeta> Head(const ObjectKey& key) = 0;
  // Whether Get, Head, HeadBucket and its readers honour a CachedReadsOnly scope
  // (cached_reads.h). A store that says no is never called inside one.
  virtual bool SupportsCachedReads() const { return false; }
  // The batch existence query (docs/design.md, missing chunks): one answer per name, in order,
  // nullopt for an absent object, all read from one consistent view of the store (on RADOS:
  // one consistent view per index shard; there is no snapshot across objects). Names
  // that are not valid keys are answered nullopt. kNotFound/kBucket if the bucket is absent.
  virtual Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) = 0;
  // kNotFound/kKey if absent (S3 callers treat that as success).
  virtual Status Delete(const ObjectKey& key) = 0;
  // Delete, only if the key's current object is the version `expected` names (same ETag and
  // mtime), decided atomically with the removal: the lifecycle worker never deletes an object
  // overwritten after it looked. kFailedPrecondition/kKey if another version is there (nothing
  // removed); kNotFound/kKey if absent. PutObjectTags keeps ETag and mtime, so a tag change
  // alone does not fail the match.
  virtual Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) = 0;
  // Copies src to dst (which may be the same key). Metadata is src's unless `replace` is
  // given (S3's x-amz-metadata-directive: REPLACE); tags are src's unless replace->tags is
  // set (x-amz-tagging-directive: REPLACE). src's checksum (an x-amz-checksum-* header) is
  // kept under `replace` too unless replace->headers carries one (S3 keeps it unless asked for
  // another algorithm). `conditions` apply to dst's current object as a PutObject's do
  // (types.h WriteConditions); a copy onto src itself checks them against src. Returns dst's
  // new metadata.
  virtual Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                                  const std::optional<PutOptions>& replace,
                                  const WriteConditions& conditions) = 0;
  // Replaces the tags of `key`'s object (S3 PutObjectTagging; no tags: DeleteObjectTagging) in
  // one atomic step with nothing else changed: bytes, ETag, metadata and mtime stay, as in S3.
  // Returns the object's metadata with its new tags. kNotFound/kKey if absent.
  virtual Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) = 0;
  // Starts a group of new objects in `bucket` (ObjectGroupWriter above). kNotFound/kBucket if
  // the bucket does not exist now (it is checked again at Commit); kUnimplemented from a
  // store that cannot commit several objects atomically.
  virtual Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) {
    (void)bucket;
    return Status::Unimplemented("this store cannot commit a group of objects atomically");
  }
  // Keys of `bucket` in byte order, after options.start_after, grouped by delimiter.
  virtual Result<ListResult> List(std::string_view bucket, const ListOptions& options) = 0;

  // --- Multipart uploads ---
  // Returns a new upload id. The options (metadata) apply to the completed object.
  virtual Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                                    const PutOptions& options) = 0;
  // Writes part `part_number` (1..kMaxPartNumber) of the upload; a part written again
  // replaces the earlier one. kNotFound/kUpload if no such upload for this key;
  // kInvalidArgument/kPart (field "partNumber") if out of range; kInvalidArgument/kUpload
  // (field: the part's checksum header) if the part declares a checksum of another algorithm
  // than the upload's (PutOptions::part_checksum_header).
  virtual Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key,
                                                           std::string_view upload_id,
                                                           uint32_t part_number,
                                                           const PutOptions& options) = 0;
  // Assembles the listed parts into the object, atomically. kNotFound/kUpload if no such
  // upload; kInvalidArgument/kPart ("InvalidPart") if a part is missing, its ETag differs,
  // its listed checksum differs from the one stored with it or its listed size from its own;
  // kInvalidArgument/kUpload ("InvalidRequest") if the upload has a checksum algorithm and a
  // part lists no checksum under it; kFailedPrecondition/kPart ("InvalidPartOrder") if numbers do
  // not ascend; kOutOfRange/kPart ("EntityTooSmall") if a part other than the last is under
  // kMinPartBytes; the errors of options.conditions against the key's current object. A
  // retry of a completion that succeeded answers that object's metadata. The parts' bytes
  // are not copied.
  virtual Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key,
                                                     std::string_view upload_id,
                                                     std::span<const CompletedPart> parts,
                                                     const CompleteOptions& options) = 0;
  // Discards the upload and its parts. kNotFound/kUpload if no such upload.
  virtual Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) = 0;
  // Parts with numbers above `part_number_marker`, ascending, at most max_parts.
  virtual Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                            uint32_t part_number_marker, uint32_t max_parts) = 0;
  virtual Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                         const ListUploadsOptions& options) = 0;

  // --- KV-cache descriptor calls (kv.h; docs/design.md "The descriptor", "Delivery") ---
  // Every one checks the descriptor's structure first (kInvalidArgument/kDescriptor naming
  // the x-oc-* field) and answers kNotFound/kBucket for an absent bucket. A present chunk of
  // the matched prefix whose size is not L·S, or whose stored ChunkShape disagrees with the
  // descriptor, is kInvalidArgument/kDescriptor naming x-oc-layout, x-oc-num-layers or
  // x-oc-layer-bytes: never a silent partial hit.

  // The batch existence query: one HEAD of the N chunk names; matched = the longest prefix
  // present, with each chunk's size (nullopt if absent).
  virtual Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                            const descriptor::Descriptor& d) = 0;

  // Delivers the longest present prefix (M chunks) of `d`: into d.target over the store's
  // UCX data plane when set (layer-ready messages per layer, then done or an error), else
  // into `body_sink`, dense in M (M·L·S bytes at offsets computed with N = M), its Write()
  // offsets strictly increasing and gap-free. Layerwise when M·L·S >= Θ
  // (KvOptions::layerwise_threshold_bytes), else chunkwise. `on_plan` (optional) runs once,
  // after the batch HEAD and the target checks and before any byte moves; its error ends
  // the request. Errors before on_plan leave body_sink untouched; from on_plan on, GetLayers
  // calls body_sink->Finish() exactly once (with the error, if any). kUnavailable if the
  // data plane or the client fails mid-transfer; kFailedPrecondition/kKey if a chunk is
  // deleted or overwritten under the request.
  // REQUIRES: body_sink != nullptr when d.target is unset.
  virtual Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                        LayerSink* body_sink,
                                        const std::function<Status(const KvPlan&)>& on_plan) = 0;

  // Stores the N chunks of `d` as objects with ChunkShape {layout, L, S} (extents of one
  // contiguous layer range), all or nothing: they become visible and durable together, only
  // after every byte arrived and `body` reported its end; on any error none is stored and
  // every earlier version stays as it was. Bytes come from the client's registered buffer
  // over UCX when d.target is set (chunk j at [j·L·S, (j+1)·L·S) of it), else from `body`,
  // the N objects back to back, which must read 0 (its verified end, kv.h) right after N·L·S
  // bytes. kInvalidArgument/kEntity if the body is shorter or longer than N·L·S; the source's
  // error if it fails (e.g. kCancelled for an abandoned body). With d.if_none_match
  // (create-if-absent) a chunk present at the commit is left as it is, decided atomically with
  // the commit of the others (ObjectGroupWriter::Commit), and reported in
  // KvPutReport::existed; the request succeeds when every chunk is written or present.
  virtual Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                        ChunkSource* body) = 0;

  // The bounded executor a front end (the gateway, the RPC server) runs this store's
  // descriptor transfers on: every GetLayers and PutChunks that moves bytes, so that their
  // threads are bounded per process whichever front end took them (docs/design.md
  // "Delivery"; docs/decisions/one-bounded-executor.md). A front end
  // Submit()s a task that makes the blocking call (a GET may wait in the executor's admission
  // queue; a PUT or an RPC call uses SubmitNow); a refusal or a queue timeout
  // (kResourceExhausted, field "kv.descriptor_threads") is its answer to the client, with
  // nothing stored or sent. A local store's KV engine owns it (KvOptions::descriptor_threads,
  // admission_queue, admission_timeout) and drains it before the store closes. nullptr from a
  // store that runs no descriptor work itself (RemoteStore forwards it to the storage server,
  // whose store runs it): the front end then relays on one of its own, with the defaults
  // (DescriptorExecutorOptions).
  virtual BoundedExecutor* descriptor_executor() { return nullptr; }

  // The data plane serving `bucket`'s descriptor requests with a target: the listener a
  // client's UCX connects to before it names the connection in a target. Opens the data
  // plane on first use; kUnavailable-class errors if it cannot be had (UCX). The caller
  // checks the bucket and access first.
  virtual Result<DataPlaneInfo> DataPlane(std::string_view bucket) = 0;

  // --- Operations ---
  // Which engine this is and what it serves (types.h StoreIdentity). Never fails.
  virtual StoreIdentity identity() const { return {}; }
  // kOk when the engine (or every remote server) answers; engine figures for /stats.
  virtual Result<StoreStats> Stats() = 0;
};

}  // namespace oc::storage
