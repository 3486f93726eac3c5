"""ObjectCache as a vLLM secondary KV tier (`SecondaryTierManager`, docs/integrations.md §2).

vLLM loads it from a `secondary_tiers` entry:

    {"type": "ObjectCacheSecondaryTier", "module_path": "objectcache.integrations.vllm",
     "endpoint": "http://10.0.0.5:9000", "bucket": "kvcache",
     "access_key": "...", "secret_key": "..."}

Every method runs on vLLM's scheduler thread and returns without waiting on the network:
- lookup() answers from an asynchronous batched probe. A key asked for the first time is
  RETRY; the keys gathered during a step go out as ONE probe at the step's end
  (on_schedule_end, or the next get_finished_jobs); once it answers, HIT or MISS. A key whose
  verdict is not known `lookup_deadline_s` after it was first asked is MISS, so a stalled
  gateway never holds a request in RETRY. At most one probe is in flight, on a client of its
  own, so a probe never waits behind loads and a stalled one never piles up more.
- submit_store() and submit_load() start descriptor PUTs / GETs and return: one request per
  run of consecutive primary slots (slot i is bytes [i*stride, (i+1)*stride) of the primary
  view), chunk j written straight into (or read straight from) its slot, no staging copy.
  Stores are create-if-absent: keys the tier already holds are skipped by the gateway.
- get_finished_jobs() polls the requests (done() only) and reports each job once, with
  `successful_keys` for a partial load and `transfer_time` (seconds from submit to the end).
  A key that failed to load is marked MISS for its request at once, so the next lookup does
  not answer HIT again (the livelock vLLM users report).
- drain_jobs() waits for every request to end; nothing in flight is ever aborted.
No Python thread of our own runs: completion is observed by polling the client's handles.

Object names: `<prefix><hex of the OffloadKey>` (the key is the block hash followed by the
KV-cache group as 4 bytes, so groups never collide). A chunk is one primary slot, stored as
`layers` slices of stride/layers bytes (kv_l2td).
"""
import logging
import time
from collections import deque

import objectcache as oc

try:
    from vllm.v1.kv_offload.base import LookupResult, RequestOffloadingContext
    from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("objectcache.integrations.vllm is loaded by vLLM's tiering offload "
                      "(vllm.v1.kv_offload.tiering); that interface is not importable here: "
                      f"{e}") from e
try:
    from vllm.v1.kv_offload.base import Medium
except ImportError:  # pragma: no cover - older interfaces have no Medium
    Medium = None

_log = logging.getLogger("objectcache.integrations.vllm")

# Stalled probes given up at once, at most (each keeps a client and a connection until the
# gateway answers or drops it); past this the tier waits for one to end.
_MAX_ABANDONED_PROBES = 4

# Tier-config keys we accept (vLLM passes every key of the tier's entry but `type` and
# `module_path` as keyword arguments); another key is a TypeError naming it.
_DEFAULTS = {
    "endpoint": None,          # required
    "bucket": None,            # required
    "access_key": "",
    "secret_key": "",
    "region": "us-east-1",
    "prefix": "vllm/",         # object name prefix
    "layers": 1,               # slices per chunk object (stride must divide evenly)
    "chunk_tokens": 16,        # x-oc-chunk-tokens of every descriptor (must match stores)
    "lookup_deadline_s": 2.0,  # a key unknown this long after first asked is MISS
    "probe_timeout_s": 10.0,   # a probe unanswered this long is given up (a new one may go)
    "timeout_s": 60.0,         # the data client's request timeout
    "requests_in_flight": 8,   # the data client's concurrent requests
    "via": "http",             # get_layers transport: "http", "ucx" or "auto"
}


def _slots_of(job):
    """The primary slot of each key: `block_ids` (TransferJob/JobMetadata) or `chunk_ids`
    (the newest interface); vLLM's class names vary, so only attributes are read."""
    for name in ("block_ids", "chunk_ids"):
        ids = getattr(job, name, None)
        if ids is not None:
            return [int(i) for i in ids]
    raise TypeError(f"{type(job).__name__} has neither block_ids nor chunk_ids")


def _runs(keys, slots):
    """(first slot, [keys]) for each maximal run of consecutive slots, in job order."""
    runs = []
    for key, slot in zip(keys, slots):
        if runs and slot == runs[-1][0] + len(runs[-1][1]):
            runs[-1][1].append(key)
        else:
            runs.append((slot, [key]))
    return runs


class _Job:
    """One submitted job: its requests (handle, keys) and when it was submitted."""
    __slots__ = ("job_id", "load", "keys", "req_id", "parts", "start", "failed")

    def __init__(self, job_id, load, keys, req_id):
        self.job_id, self.load, self.keys, self.req_id = job_id, load, keys, req_id
        self.parts = []  # (Transfer or Future, keys of that run)
        self.start = time.monotonic()
        self.failed = []  # keys whose request could not even be started

    def done(self):
        return all(h.done() for h, _ in self.parts)


class ObjectCacheSecondaryTier(SecondaryTierManager):
    """The tier. Single-threaded by contract (vLLM's scheduler thread)."""

    if Medium is not None:
        medium = Medium.STORAGE

    def __init__(self, offloading_spec, primary_kv_view, tier_type, **tier_config):
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        unknown = sorted(set(tier_config) - set(_DEFAULTS))
        if unknown:
            raise TypeError(f"ObjectCacheSecondaryTier: unknown tier config key(s) {unknown}; "
                            f"known: {sorted(_DEFAULTS)}")
        cfg = dict(_DEFAULTS, **tier_config)
        for name in ("endpoint", "bucket"):
            if not cfg[name]:
                raise TypeError(f"ObjectCacheSecondaryTier: tier config needs {name!r}")
        self._cfg = cfg
        view = memoryview(primary_kv_view)
        if len(view) == 0 or view.ndim < 1:
            raise ValueError("the primary KV view holds no slots")
        self._slots = len(view)
        self._stride = view.strides[0] if view.ndim > 1 else view.itemsize
        self._bytes = view.cast("B") if view.ndim > 1 or view.format != "B" else view
        layers = int(cfg["layers"])
        if layers < 1 or self._stride % layers:
            raise ValueError(f"layers={layers} does not divide the slot size {self._stride}")
        self._layers, self._layer_bytes = layers, self._stride // layers
        # Clients are made lazily: vLLM builds the tier before the KV cache is configured
        # and asks for no threads until then.
        self._probe_client = None
        self._data_client = None
        # Lookup state. _verdicts: req_id -> {key: HIT or MISS}, final for that request.
        # _asked: key -> (monotonic time first asked, set of req_ids waiting for it).
        # _probe: (Future, [keys]) of the probe in flight, or None.
        self._verdicts = {}
        self._asked = {}
        self._gathered = []  # keys asked but not yet in a probe, in order
        self._probe = None
        # Probes given up after probe_timeout_s, with the client each ran on: kept referenced
        # (dropping a pending Future waits for it) and reaped once they end. A stalled probe
        # holds its client's only thread, so the next probe goes out on a fresh client.
        self._abandoned = []
        self._jobs = {}  # job_id -> _Job, submitted and not yet reported
        self._finished = []  # JobResults drained but not yet reported
        # Per-job load figures, newest last: (job_id, keys, bytes, seconds) of every load
        # (a user sees whether a hit beats recompute).
        self.load_log = deque(maxlen=4096)

    # -- clients ---------------------------------------------------------------------------
    def _client(self, probe):
        if probe and self._probe_client is None:
            self._probe_client = oc.Client(
                self._cfg["endpoint"], self._cfg["access_key"], self._cfg["secret_key"],
                region=self._cfg["region"], timeout=float(self._cfg["probe_timeout_s"]),
                requests_in_flight=1)
        if not probe and self._data_client is None:
            self._data_client = oc.Client(
                self._cfg["endpoint"], self._cfg["access_key"], self._cfg["secret_key"],
                region=self._cfg["region"], timeout=float(self._cfg["timeout_s"]),
                requests_in_flight=int(self._cfg["requests_in_flight"]))
        return self._probe_client if probe else self._data_client

    def _name(self, key):
        return self._cfg["prefix"] + bytes(key).hex()

    def _descriptor(self, keys):
        return oc.Descriptor([self._name(k) for k in keys], layers=self._layers,
                             layer_bytes=self._layer_bytes,
                             chunk_tokens=int(self._cfg["chunk_tokens"]),
                             delivery="chunk-major")

    # -- lookups ---------------------------------------------------------------------------
    def lookup(self, key, req_context):
        req_id = req_context.req_id
        verdicts = self._verdicts.setdefault(req_id, {})
        verdict = verdicts.get(key)
        if verdict is not None:
            return verdict
        self._settle_lookups()
        verdict = verdicts.get(key)
        if verdict is not None:
            return verdict
        entry = self._asked.get(key)
        if entry is None:
            self._asked[key] = (time.monotonic(), {req_id})
            self._gathered.append(key)
        else:
            entry[1].add(req_id)
        return LookupResult.RETRY

    def _decide(self, key, verdict):
        _, waiting = self._asked.pop(key, (0.0, ()))
        for req_id in waiting:
            if req_id in self._verdicts:  # not finished meanwhile
                self._verdicts[req_id][key] = verdict

    def _settle_lookups(self):
        """Applies a finished probe, then the deadline. Never waits."""
        if self._abandoned:
            self._abandoned = [a for a in self._abandoned if not a[0].done()]
        if self._probe is not None and not self._probe[0].done():
            future, keys, sent = self._probe
            if (time.monotonic() - sent > float(self._cfg["probe_timeout_s"]) and
                    len(self._abandoned) < _MAX_ABANDONED_PROBES):
                self._abandoned.append((future, self._probe_client))
                self._probe_client = None
                self._probe = None  # its keys stay asked: MISS by their deadline
        if self._probe is not None and self._probe[0].done():
            future, keys, _ = self._probe
            self._probe = None
            try:
                result = future.result(0)
                present, sizes = result.present, result.sizes
            except oc.ObjectCacheError as e:
                _log.warning("probe of %d keys failed: %s", len(keys), e)
                present, sizes = [False] * len(keys), [None] * len(keys)
            for key, p, size in zip(keys, present, sizes):
                hit = bool(p) and size == self._stride
                self._decide(key, LookupResult.HIT if hit else LookupResult.MISS)
        if self._asked:
            # _asked is in the order keys were first asked, so the late ones lead: the scan
            # stops at the first key still in time (amortised O(1) per call).
            limit = time.monotonic() - float(self._cfg["lookup_deadline_s"])
            late = []
            for key, (asked, _) in self._asked.items():
                if asked > limit:
                    break
                late.append(key)
            for key in late:  # a stalled probe (or one never sent): MISS, not RETRY forever
                self._decide(key, LookupResult.MISS)
            if late:
                self._gathered = [k for k in self._gathered if k in self._asked]

    def _flush_probe(self):
        """Sends the gathered keys as one probe, unless one is still in flight."""
        self._settle_lookups()
        if self._probe is not None or not self._gathered:
            return
        keys = [k for k in self._gathered if k in self._asked]
        self._gathered = []
        if not keys:
            return
        try:
            future = self._client(True).probe_async(self._cfg["bucket"], self._descriptor(keys))
        except oc.ObjectCacheError as e:  # refused at once (queue full, bad name)
            _log.warning("probe of %d keys not sent: %s", len(keys), e)
            for key in keys:
                self._decide(key, LookupResult.MISS)
            return
        self._probe = (future, keys, time.monotonic())

    def on_schedule_end(self, context):
        self._flush_probe()

    # -- transfers -------------------------------------------------------------------------
    def _submit(self, job, load):
        keys = list(job.keys)
        slots = _slots_of(job)
        if len(slots) != len(keys):
            raise ValueError(f"job {job.job_id}: {len(keys)} keys but {len(slots)} slots")
        req_id = getattr(getattr(job, "req_context", None), "req_id", None)
        record = _Job(job.job_id, load, keys, req_id)
        client = self._client(False)
        bucket = self._cfg["bucket"]
        for first, run in _runs(keys, slots):
            if first < 0 or first + len(run) > self._slots:
                record.failed.extend(run)
                continue
            d = self._descriptor(run)
            # The run's slots as a view (no copy): put_chunks takes exactly N·L·S bytes.
            slots = self._bytes[first * self._stride:(first + len(run)) * self._stride]
            try:
                if load:
                    handle = client.get_layers(bucket, d, slots, via=self._cfg["via"])
                else:
                    handle = client.put_chunks_async(bucket, d, slots, if_absent=True)
            except oc.ObjectCacheError as e:
                _log.warning("job %s: %d keys not started: %s", job.job_id, len(run), e)
                record.failed.extend(run)
                continue
            record.parts.append((handle, run))
        self._jobs[job.job_id] = record

    def submit_store(self, job_metadata):
        self._submit(job_metadata, load=False)

    def submit_load(self, job_metadata):
        self._submit(job_metadata, load=True)

    def _result(self, job):
        """The JobResult of a finished job (every handle done)."""
        ok_keys = []
        nbytes = 0
        for handle, run in job.parts:
            try:
                if job.load:
                    matched = handle.wait(0).matched
                    ok_keys.extend(run[:matched])
                    nbytes += matched * self._stride
                else:
                    put = handle.result(0)
                    ok_keys.extend(k for k, s in zip(run, put.status) if s != "failed")
            except oc.ObjectCacheError as e:
                _log.warning("job %s: %d keys failed: %s", job.job_id, len(run), e)
        seconds = time.monotonic() - job.start
        success = len(ok_keys) == len(job.keys)
        successful = None
        if job.load:
            if not success:
                successful = ok_keys
                self._forget_failed_load(job, set(ok_keys))
            self.load_log.append((job.job_id, len(job.keys), nbytes, seconds))
            _log.debug("load job=%s keys=%d loaded=%d bytes=%d s=%.6f", job.job_id,
                       len(job.keys), len(ok_keys), nbytes, seconds)
        return JobResult(job_id=job.job_id, success=success, successful_keys=successful,
                         transfer_time=seconds)

    def _forget_failed_load(self, job, loaded):
        """A key that did not load is MISS for its request from now on."""
        verdicts = self._verdicts.get(job.req_id)
        if verdicts is None:
            return
        for key in job.keys:
            if key not in loaded:
                verdicts[key] = LookupResult.MISS

    def get_finished_jobs(self):
        self._flush_probe()  # a step with lookups but no on_schedule_end still probes
        out, self._finished = self._finished, []
        for job_id in [j for j, job in self._jobs.items() if job.done()]:
            out.append(self._result(self._jobs.pop(job_id)))
        return out

    def drain_jobs(self):
        """Waits until every submitted job has ended; aborts nothing. The results are
        reported by the next get_finished_jobs()."""
        for job_id in list(self._jobs):
            job = self._jobs[job_id]
            for handle, _ in job.parts:
                while not handle.done():
                    try:
                        if job.load:
                            handle.wait(1.0)
                        else:
                            handle.result(1.0)
                    except oc.ObjectCacheError:
                        pass  # a timeout of this wait, or the request's error: done() says
            self._finished.append(self._result(self._jobs.pop(job_id)))

    def has_pending_work(self):
        return bool(self._jobs or self._finished or self._probe or self._gathered or
                    self._asked)

    # -- requests --------------------------------------------------------------------------
    def on_new_request(self, req_context):
        self._verdicts.setdefault(req_context.req_id, {})
        return RequestOffloadingContext()

    def on_request_finished(self, req_context):
        self._verdicts.pop(req_context.req_id, None)
        for _, waiting in self._asked.values():
            waiting.discard(req_context.req_id)

    def touch(self, keys, req_context):
        return  # the gateway's own policy governs eviction

    def take_events(self):
        return ()

    def shutdown(self):
        """Waits for the jobs in flight (they write into the primary view), then closes the
        data client; a probe still pending is left to end on its own."""
        self.drain_jobs()
        self._finished = []
        if self._probe is not None and not self._probe[0].done():
            self._abandoned.append((self._probe[0], self._probe_client))
        elif self._probe_client is not None:
            self._probe_client.close()
        self._probe = None
        if self._data_client is not None:
            self._data_client.close()
        self._probe_client = self._data_client = None
