"""A stand-in for LMCache's MP-mode L2 wrapper (`NativeConnectorL2Adapter`), written from the
table in docs/integrations.md, section 1 (LMCache cannot be installed here; no LMCache code is
copied). It drives a native_plugin connector the way that wrapper does:

- the loader's check: every required method callable, else close() and TypeError;
- event_fd() once, in the constructor;
- submit_batch_* called while holding the wrapper's lock, the future id registered under the
  same lock (so a completion cannot be routed before its id is known);
- one daemon thread poll()ing the eventfd for POLLIN with a 500 ms timeout, calling
  drain_completions() when readable (an exception is recorded and the loop goes on) and routing
  each (future_id, ok, error, per_key) by id; an unknown id is counted and dropped;
- the wrapper's reading of a completion: set -> ok only; exists -> per_key if ok and a list,
  else nothing found; get -> per_key if a list WHATEVER ok says, all loaded if None and ok,
  none if None and not ok; delete -> keys with per_key true;
- delete() blocks up to 30 s; close() stops and joins the thread (5 s) before the connector's
  close().
"""
import select
import threading

REQUIRED = ("event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close")
POLL_TIMEOUT_MS = 500
DELETE_TIMEOUT_S = 30.0
JOIN_TIMEOUT_S = 5.0


def check_connector(connector):
    """The loader's method check: TypeError (after close()) if a required method is missing."""
    missing = [m for m in REQUIRED if not callable(getattr(connector, m, None))]
    if missing:
        close = getattr(connector, "close", None)
        if callable(close):
            close()
        raise TypeError(f"native connector lacks {missing}")
    return callable(getattr(connector, "submit_batch_delete", None))


class Pending:
    """One submitted batch: its kind, key count, and the interpreted result once routed."""

    def __init__(self, kind, n):
        self.kind = kind
        self.n = n
        self.event = threading.Event()
        self.result = None  # set: bool; exists/get/delete: list[bool]
        self.raw = None  # the completion tuple as drained

    def wait(self, timeout):
        if not self.event.wait(timeout):
            raise TimeoutError(f"{self.kind} of {self.n} keys did not complete in {timeout} s")
        return self.result


def interpret(kind, n, ok, per_key):
    """What the wrapper makes of (ok, per_key) for an operation of n keys."""
    if kind == "set":
        return bool(ok)
    if kind == "exists":
        return [bool(x) for x in per_key] if ok and isinstance(per_key, list) else [False] * n
    if kind == "get":
        if isinstance(per_key, list):
            return [bool(x) for x in per_key]
        return [bool(ok)] * n
    if kind == "delete":
        return [bool(x) for x in per_key] if isinstance(per_key, list) else [False] * n
    raise ValueError(kind)


class NativeConnectorStandIn:
    def __init__(self, connector):
        self.has_delete = check_connector(connector)
        self.connector = connector
        self.fd = connector.event_fd()
        self.lock = threading.Lock()
        self.pending = {}  # future id -> Pending; guarded by lock
        self.unknown_ids = []  # completions for ids never submitted
        self.drain_errors = []  # exceptions drain_completions() raised
        self.completions = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._demux, name="lmcache-standin-demux",
                                       daemon=True)
        self.thread.start()

    def _demux(self):
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(POLL_TIMEOUT_MS):
                continue
            try:
                done = self.connector.drain_completions()
            except Exception as e:  # the wrapper logs and goes on
                self.drain_errors.append(e)
                continue
            for completion in done:
                future_id, ok, error, per_key = completion
                with self.lock:
                    p = self.pending.pop(future_id, None)
                if p is None:
                    self.unknown_ids.append(future_id)
                    continue
                p.raw = completion
                p.result = interpret(p.kind, p.n, ok, per_key)
                self.completions += 1
                p.event.set()

    def _submit(self, kind, call, keys, *args):
        with self.lock:
            future_id = call(keys, *args)
            p = Pending(kind, len(keys))
            self.pending[future_id] = p
        return p

    # The wrapper's operations, asynchronous (a Pending) and blocking.
    def submit_store(self, keys, views):
        return self._submit("set", self.connector.submit_batch_set, keys, views)

    def submit_lookup(self, keys):
        return self._submit("exists", self.connector.submit_batch_exists, keys)

    def submit_load(self, keys, views):
        return self._submit("get", self.connector.submit_batch_get, keys, views)

    def store(self, keys, views, timeout=60):
        return self.submit_store(keys, views).wait(timeout)

    def lookup(self, keys, timeout=60):
        return self.submit_lookup(keys).wait(timeout)

    def load(self, keys, views, timeout=60):
        return self.submit_load(keys, views).wait(timeout)

    def delete(self, keys):
        if not self.has_delete:
            return [False] * len(keys)  # the wrapper warns once and never deletes
        p = self._submit("delete", self.connector.submit_batch_delete, keys)
        return p.wait(DELETE_TIMEOUT_S)

    def close(self):
        self.stop.set()
        self.thread.join(JOIN_TIMEOUT_S)
        alive = self.thread.is_alive()
        self.connector.close()
        return not alive
