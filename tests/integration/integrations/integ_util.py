"""Helpers of the adapter tests (issue 32): the package CMake built and the framework stand-ins
(standins/, written from docs/integrations.md) on sys.path, a gateway that never answers, and
waiting on a condition with a deadline."""
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "standins")
PYTHON_DIR = os.environ.get("OC_PYTHON_DIR", "")
for path in (PYTHON_DIR, STANDINS):
    if path and path not in sys.path:
        sys.path.insert(0, path)

import objectcache as oc  # noqa: E402,F401


def until(condition, deadline_s=30.0, what="the condition"):
    """Polls `condition()` until it returns something true (returned) or the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what} did not hold within {deadline_s} s")
        time.sleep(0.001)


class StalledGateway:
    """A TCP listener that accepts and reads but never answers: a gateway that hangs.
    close() resets every connection it accepted."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.lock = threading.Lock()
        self.conns = []  # guarded by lock
        self.closed = False  # guarded by lock
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                if not self.closed:
                    self.conns.append(conn)
                    continue
            conn.close()

    def close(self):
        with self.lock:
            self.closed = True
            conns, self.conns = self.conns, []
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in conns:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
