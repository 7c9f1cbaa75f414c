"""Test helpers for the Python drivers: a real redis-server on a free loopback
port, a driver process spoken to over the protocol, and a bare RESP client
(the tests' own interpreter need not have redis-py)."""

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DRIVER = os.path.join(HERE, "lockchaos_driver.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(port, *args, timeout=2.0):
    """Sends one command, returns its reply (bulk strings decoded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        f = s.makefile("rb")
        return _read(f)


def _read(f):
    line = f.readline()
    if not line:
        raise ConnectionError("closed")
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest.decode()
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode("utf-8", "replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise RuntimeError(f"bad reply {line!r}")


def kill(proc, how):
    """Stops proc by its pid (how=os.kill) or process group (os.killpg), stopped or not."""
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            how(proc.pid, sig)
        except ProcessLookupError:
            pass
    proc.wait(timeout=5)


class RedisServer:
    def __init__(self, extra=()):
        self.port = free_port()
        self.extra = list(extra)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + self.extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20  # a loaded machine starts slowly
        while True:
            try:
                if resp(self.port, "PING", timeout=0.5) == "PONG":
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        kill(self.proc, os.kill)


@pytest.fixture
def server():
    s = RedisServer()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="session")
def driver_python():
    """The driver venv's python (scripts/drivers-python.sh installs it once
    into the driver cache). LOCKCHAOS_TEST_VERSIONS="redis==5.0.8 ..." runs the
    tests with other versions of the libraries."""
    argv = [os.path.join(ROOT, "scripts", "drivers-python.sh"), "--print-python"]
    for v in os.environ.get("LOCKCHAOS_TEST_VERSIONS", "").split():
        argv += ["--version", v]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"scripts/drivers-python.sh failed:\n{r.stderr[-3000:]}")
    return r.stdout.strip().splitlines()[-1]


class Driver:
    """A driver process and its protocol lines."""

    def __init__(self, argv, env=None, cwd=None):
        e = dict(os.environ, PYTHONUNBUFFERED="1")
        e.update(env or {})
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=e, cwd=cwd, start_new_session=True)
        self.lines = queue.Queue()
        self.events = []
        self.errlines = []
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._readerr, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def _readerr(self):
        for raw in self.proc.stderr:
            self.errlines.append(raw.decode("utf-8", "replace"))

    def send(self, msg):
        msg = dict(msg, id=self.next_id)
        self.next_id += 1
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return msg["id"]

    def wait(self, rid, timeout=10.0):
        """The reply to rid; pushed events met on the way are kept in events."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no reply to {rid} within {timeout}s; stderr: {''.join(self.errlines)[-2000:]}")
            try:
                m = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise AssertionError(f"driver exited; stderr: {''.join(self.errlines)[-2000:]}")
            if "in_reply_to" not in m:
                self.events.append(m)
                continue
            assert m["in_reply_to"] == rid, f"reply to {m['in_reply_to']} while waiting for {rid}: {m}"
            return m

    def call(self, msg, timeout=10.0):
        return self.wait(self.send(msg), timeout)

    def hello(self):
        return self.call({"type": "hello", "protocol": 1})

    def init(self, addr, conn_name, command_timeout_ms=250, extra=None, topology="single", endpoints=None):
        return self.call({"type": "init", "client": 1, "conn_name": conn_name, "key_prefix": "lc:t:",
                          "topology": topology, "endpoints": endpoints or [{"addr": addr}],
                          "options": {"ttl_ms": 500, "acquire_timeout_ms": 1000,
                                      "command_timeout_ms": command_timeout_ms, "retry_delay_ms": 10,
                                      "renew_interval_ms": 166, "extra": extra or {}}})

    def shutdown(self):
        """Asks it to exit (stop waits for it)."""
        try:
            if self.proc.poll() is None:
                self.send({"type": "shutdown"})
        except OSError:
            pass

    def stop(self):
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.proc.poll() is None:
                kill(self.proc, os.killpg)


@pytest.fixture
def drivers():
    """Starts drivers on demand; every one is stopped (by its process group) at the end."""
    started = []

    def start(argv, **kw):
        d = Driver(argv, **kw)
        started.append(d)
        return d

    try:
        yield start
    finally:
        for d in started:
            d.shutdown()
        for d in started:
            d.stop()
