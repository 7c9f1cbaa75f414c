"""Test helpers for the Python drivers: a real redis-server on a free loopback
port, a driver process spoken to over the protocol, and a bare RESP client
(the tests' own interpreter need not have redis-py)."""

import contextlib
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
        self.extra = list(extra)
        for _ in range(3):  # the free port may be taken before the server binds it: another
            if self._start():
                return
        raise RuntimeError("redis-server did not start")

    def _start(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + self.extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20  # a loaded machine starts slowly
        while self.proc.poll() is None and time.monotonic() < deadline:
            try:  # ours, not another process's that had the port
                if f"process_id:{self.proc.pid}\r" in resp(self.port, "INFO", "server", timeout=0.5):
                    return True
            except (OSError, RuntimeError):
                pass
            time.sleep(0.02)
        self.stop()
        return False

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        kill(self.proc, os.kill)


@contextlib.contextmanager
def running(thing):
    """Stops thing (a RedisServer, a Forwarder) however the block ends."""
    try:
        yield thing
    finally:
        thing.stop()


@pytest.fixture
def server():
    with running(RedisServer()) as s:
        yield s


class Forwarder:
    """A loopback TCP proxy in front of target ("host:port"), counting the
    connections it carried and keeping the first bytes each client sent:
    stands in for lockchaos's per-client proxies."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.accepted = 0
        self.socks = []
        self.first = []  # per connection: the client's first bytes (up to 1 KiB)
        self.mu = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        host, port = self.target.rsplit(":", 1)
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection((host, int(port)), timeout=5)
            u.settimeout(None)
            with self.mu:
                self.accepted += 1
                self.socks += [c, u]
                self.first.append(bytearray())
                head = self.first[-1]
            threading.Thread(target=self._pump, args=(c, u, head), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, None), daemon=True).start()

    def upstream_ports(self):
        """The local ports of the connections to the target (the target's view of them)."""
        with self.mu:
            return {x.getsockname()[1] for x in self.socks[1::2] if x.fileno() >= 0}

    @staticmethod
    def _pump(a, b, head):
        try:
            while data := a.recv(65536):
                if head is not None and len(head) < 1024:
                    head += data[:1024 - len(head)]
                b.sendall(data)
        except OSError:
            pass
        finally:
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        # shutdown before close: a socket closed while a pump thread is blocked in its recv
        # stays open in the kernel. The upstream of a client that went away as the proxy
        # stopped then stayed connected to the server, named as the client, and the next
        # test's check read it as a connection past the proxy (test_cluster, a CI rehearsal).
        with self.mu:
            socks = [self.lsock] + self.socks
        for x in socks:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()


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
