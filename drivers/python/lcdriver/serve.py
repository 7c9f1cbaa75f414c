"""The protocol side of a Python driver (docs/driver-protocol.md): a lock
(lcdriver.base.BaseLock) is served over JSON lines on stdin and stdout.
stdout carries protocol lines only, anything else goes to stderr. stdin is
read on its own thread, which answers ping and clock at once, even while
the worker thread is inside a library call; every other request is run by
the worker, one at a time, in the order it came.

    from lcdriver import BaseLock, serve
    class MyLock(BaseLock): ...
    serve(MyLock())
"""

import atexit
import json
import os
import queue
import signal
import sys
import threading
import time

from .base import log, now

PROTOCOL = 1

# Our own encoder: pottery monkey-patches json.dumps when it is imported.
_encode = json.JSONEncoder(separators=(",", ":")).encode


class Driver:
    def __init__(self, lock, inp, out):
        self.lock = lock
        self.inp = inp
        self.out = out
        self.out_mu = threading.Lock()
        self.work = queue.Queue()
        lock.push = self.send
        # The cancel extension: the request in the worker now, the ones
        # queued for it, and those cancelled before they started. Under
        # cancel_mu, which a reply is sent under too: a cancel_ok that says
        # delivered comes before the cancelled request's answer.
        self.cancel_mu = threading.Lock()
        self.current = None
        self.queued = set()
        self.cancel_first = set()

    def send(self, msg):
        line = (_encode(msg) + "\n").encode()
        with self.out_mu:
            self.out.write(line)
            self.out.flush()

    def read(self):
        """The stdin thread: ping and clock answered here, the rest queued."""
        for raw in self.inp:
            raw = raw.strip()
            if not raw:
                continue
            try:
                msg = json.loads(raw)
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                print(f"lockchaos driver: bad request line {raw[:200]!r}: {e}", file=sys.stderr, flush=True)
                continue
            kind = msg.get("type")
            if kind == "ping":
                t = now()
                self.send({"in_reply_to": msg.get("id"), "type": "pong", "t0": t, "t1": t})
            elif kind == "clock":
                self.send({"in_reply_to": msg.get("id"), "type": "clock_ok",
                           "mono_ns": time.monotonic_ns(), "wall_ns": time.time_ns()})
            elif kind == "cancel" and self.lock.cancellable:
                self.cancel(msg)
            else:
                with self.cancel_mu:
                    self.queued.add(msg.get("id"))
                self.work.put(msg)
        self.work.put(None)

    def cancel(self, msg):
        """The cancel extension: the call in flight is cancelled by the
        lock (BaseLock.cancel_call); a request still queued starts
        cancelled; anything else was answered already."""
        of = msg.get("of")
        with self.cancel_mu:
            if of is not None and of == self.current:
                self.lock.cancel_call()
                delivered = True
            elif of in self.queued:
                self.cancel_first.add(of)
                delivered = True
            else:
                delivered = False
            self.send({"in_reply_to": msg.get("id"), "type": "cancel_ok", "delivered": delivered})

    def serve(self):
        threading.Thread(target=self.read, name="stdin", daemon=True).start()
        if "sigterm" in self.lock.hello_extensions():
            # The sigterm extension: SIGTERM raises SystemExit in this
            # thread, which runs the lock's calls, wherever it is (inside a
            # call, or waiting for the next request), as in a Python
            # application with a handler; shutdown then unwinds the holds.
            signal.signal(signal.SIGTERM, _sigterm)
        try:
            self.loop()
        except SystemExit:
            log("SIGTERM: shutting down (the holds unwind, then the interpreter exits)")
            self.lock.shutdown(grace_s=max(1.0, (self.lock.cfg.get("ttl_ms") or 1000) / 1000.0))
            self.out.flush()
            return True
        return False

    def loop(self):
        while True:
            msg = self.work.get()
            if msg is None:  # stdin closed: lockchaos is gone
                return
            rid = msg.get("id")
            kind = msg.get("type")
            with self.cancel_mu:
                self.queued.discard(rid)
                self.current = rid
                self.lock.cancel_reset(rid in self.cancel_first)
                self.cancel_first.discard(rid)
            try:
                reply = self.handle(kind, msg)
            except Exception as e:  # anything the library threw that the lock did not map
                reply = {"type": "error", "error": f"{type(e).__name__}: {e}"}
            reply = dict(reply, in_reply_to=rid)
            with self.cancel_mu:
                self.current = None
                self.lock.cancel_reset(False)
                self.send(reply)
            if kind == "shutdown":
                return

    def handle(self, kind, msg):
        lk = self.lock
        if kind == "hello":
            if msg.get("protocol", PROTOCOL) != PROTOCOL:
                return {"type": "error", "error": f"protocol {msg.get('protocol')} not spoken (this driver: {PROTOCOL})"}
            ext = lk.hello_extensions()
            return {"type": "hello_ok", "protocol": PROTOCOL, "name": lk.name, "library": lk.library,
                    "version": lk.version(), "language": "python", "capabilities": lk.capabilities,
                    "reports": lk.reports, "options": lk.options,
                    **({"extensions": ext} if ext else {}), **({"apis": lk.apis} if lk.apis else {})}
        if kind == "init":
            return lk.init(msg)
        if kind == "acquire":
            return lk.acquire(msg["key"], int(msg["ttl_ms"]), int(msg.get("wait_ms", 0)))
        if kind == "release":
            return lk.release(msg["lease"], msg.get("throw"))
        if kind == "extend":
            return lk.extend(msg["lease"], int(msg["ttl_ms"]))
        if kind == "shutdown":
            lk.close()
            return {"type": "shutdown_ok"}
        if kind == "reset" and "reset" in lk.hello_extensions():
            return lk.reset()
        return {"type": "error", "error": f"unsupported: request type {kind!r}"}


def _sigterm(signum, frame):
    raise SystemExit(128 + signum)


def serve(lock):
    """Serves lock until shutdown or the end of stdin, then exits the process."""
    # The protocol gets its own copy of stdout; fd 1 and sys.stdout then point at stderr, so that
    # nothing a library prints can break a protocol line.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if Driver(lock, sys.stdin.buffer, out).serve():
        # SIGTERM: the interpreter's exit as an application's, its two steps
        # that matter to a lock: it joins the threads that are not daemons (a
        # library's renewer that is not one keeps the process, and renews,
        # until lockchaos kills it after the grace), then runs atexit. (Not
        # sys.exit itself: its finalization would abort on our stdin reader,
        # a daemon blocked in a read.)
        out.flush()
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    out.flush()
    # Library threads (renewers, executors) must not keep the process: the
    # holds it leaves expire at the servers, as a crashed client's would.
    os._exit(0)
