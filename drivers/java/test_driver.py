#!/usr/bin/env python3
"""Tests lockchaos' Redisson driver (drivers/java) and the worked example (examples/java-driver)
over the lock-client protocol (docs/driver-protocol.md), against real redis-server processes
started here on free loopback ports and stopped by pid.

    python3 drivers/java/test_driver.py [-v]      (drivers/java/test.sh builds the jars first)

Prints one line per check, the numbers it measured (start-up, renewals, the pause), and a closing
'N passed, N failed' line; exits 1 when any check failed.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(ROOT, "examples", "java-driver")
VERBOSE = "-v" in sys.argv
DEADLINE = time.monotonic() + 115  # the whole file stays under 2 minutes

passed, failed = 0, 0
numbers = []
procs = []  # every process started here, stopped by pid in the end
dirs = []  # every server's directory, removed in the end


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s %s" % (name, detail if VERBOSE else ""))
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def note(fmt, *args):
    line = fmt % args
    numbers.append(line)
    print("     " + line)


def bindable(port):
    """The port bound and let go (0: any free one), or None when it is taken."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return None
    finally:
        s.close()


def free_port(bus=False):
    """A free loopback port; with bus, one whose cluster bus port (port+10000) is free too."""
    if not bus:
        return bindable(0)
    for _ in range(200):
        port = bindable(random.randint(20000, 45000))
        if port and bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair")


class Resp:
    """A minimal RESP client, enough for PTTL, EXISTS, CLIENT LIST and MONITOR."""

    def __init__(self, port, timeout=2.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.f = self.sock.makefile("rb")

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line:
            raise EOFError("connection closed")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.f.read(n + 2)[:-2].decode()
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise ValueError("bad reply %r" % line)

    def close(self):
        self.sock.close()


class Redis:
    def __init__(self, *extra, sentinel_of=None):
        self.port = free_port(bus="--cluster-enabled" in extra)
        self.dir = tempfile.mkdtemp(prefix="lockchaos-java-test-")
        dirs.append(self.dir)
        if sentinel_of:  # a Sentinel watching sentinel_of as "mymaster", quorum 1
            conf = os.path.join(self.dir, "sentinel.conf")
            with open(conf, "w") as f:
                f.write("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n"
                        % (self.port, self.dir, sentinel_of.port))
            cmd = ["redis-sentinel", conf]
        else:
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--dir", self.dir] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(self.proc)
        for _ in range(100):
            try:
                self.conn = Resp(self.port)
                if self.conn.cmd("PING") == "PONG":
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server on %d did not start" % self.port)

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def cmd(self, *args):
        return self.conn.cmd(*args)

    def addrs_named(self, name):
        """The ip:port of every connection named name (CLIENT LIST)."""
        out = set()
        for line in self.cmd("CLIENT", "LIST").splitlines():
            f = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
            if f.get("name") == name:
                out.add(f["addr"])
        return out


class Monitor(threading.Thread):
    """MONITOR on one server: (server time, client addr, command) for every command."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.conn = Resp(port)
        self.conn.cmd("MONITOR")
        self.conn.sock.settimeout(None)  # a timed-out socket file cannot be read again
        self.lines = []
        self.stop = False
        self.start()

    def run(self):
        pat = re.compile(r'^(\d+\.\d+) \[\d+ ([^\]]+)\] "([^"]+)"')
        while not self.stop:
            try:
                line = self.conn.f.readline()
            except (OSError, ValueError):
                return
            if not line:
                return
            m = pat.match(line[1:].decode(errors="replace"))
            if m:
                self.lines.append((float(m.group(1)), m.group(2), m.group(3).upper()))

    def close(self):
        self.stop = True
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


class Driver:
    """One driver process: requests by id, replies matched by in_reply_to."""
    seq = 0

    def __init__(self, cmd, cwd, label, env=None):
        self.label = label
        self.err = tempfile.TemporaryFile()
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     start_new_session=True, env=env)
        procs.append(self.proc)
        self.replies = {}
        self.order = []  # (in_reply_to, type) in arrival order
        self.bad = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            try:
                m = json.loads(raw)
            except ValueError:
                self.bad.append(raw)
                continue
            with self.cv:
                if "in_reply_to" in m:
                    self.replies[m["in_reply_to"]] = m
                    self.order.append((m["in_reply_to"], m["type"]))
                self.cv.notify_all()

    def send(self, msg):
        Driver.seq += 1
        msg = dict(msg, id=Driver.seq)
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return msg["id"]

    def wait(self, rid, timeout=10.0):
        end = time.monotonic() + timeout
        with self.cv:
            while rid not in self.replies:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("%s: no reply to %d; stderr: %s" % (self.label, rid, self.stderr()[-500:]))
                self.cv.wait(left)
            return self.replies[rid]

    def req(self, msg, timeout=10.0):
        return self.wait(self.send(msg), timeout)

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def hello_init(self, client, endpoints, topology="single", extra=None, ttl=1000, cmd_timeout=250):
        self.hello = self.req({"type": "hello", "protocol": 1}, 30)
        self.ms_hello = (time.monotonic() - self.t_start) * 1000
        self.conn_name = "lockchaos-test-c%d" % client
        self.init = self.req({"type": "init", "client": client, "conn_name": self.conn_name, "key_prefix": "lc:t:",
                              "topology": topology, "endpoints": [{"addr": a} for a in endpoints],
                              "options": {"ttl_ms": ttl, "acquire_timeout_ms": 1000, "command_timeout_ms": cmd_timeout,
                                          "retry_delay_ms": 10, "renew_interval_ms": ttl // 3, "extra": extra or {}}}, 30)
        self.ms_init = (time.monotonic() - self.t_start) * 1000
        return self.init

    def acquire(self, key, ttl=1000, wait=0, timeout=10.0):
        return self.req({"type": "acquire", "key": key, "ttl_ms": ttl, "wait_ms": wait}, timeout)

    def release(self, lease, timeout=10.0):
        return self.req({"type": "release", "lease": lease}, timeout)

    def shutdown(self):
        r = self.req({"type": "shutdown"}, 5)
        rc = self.proc.wait(5)
        return r, rc


def java_driver(lock, label):
    return Driver(["sh", "run.sh", "--lock", lock], HERE, label)


def example_driver(label):
    # the command of examples/java-driver/my-lock.yaml
    return Driver(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", "target/my-lock-driver.jar"], EXAMPLE, label)


def reset(r):
    """The reset extension (warm drivers): refused while a lease is held; after it, the run's clients
    are gone (their connections closed within a moment) and a fresh init under another name locks on
    new ones, timed against the process's first start."""
    a = java_driver("redisson", "reset")
    t0 = time.monotonic()
    a.hello_init(70, [r.addr], extra={"warmup": "true"})
    cold = (time.monotonic() - t0) * 1000
    check("reset: hello lists it", "reset" in a.hello.get("extensions", []), str(a.hello))
    first = a.conn_name
    key = "lc:t:reset"
    x = a.acquire(key, ttl=2000)
    refused = a.req({"type": "reset"})
    check("reset: refused while a lease is held", refused["type"] == "error" and "leases held" in refused.get("error", ""),
          str(refused))
    check("reset: the release after it", a.release(x["lease"])["type"] == "released")
    check("reset: reset_ok", a.req({"type": "reset"})["type"] == "reset_ok")
    t1 = time.monotonic()
    init = a.req({"type": "init", "client": 71, "conn_name": "lockchaos-test-c71", "key_prefix": "lc:t:",
                  "topology": "single", "endpoints": [{"addr": r.addr}],
                  "options": {"ttl_ms": 1000, "acquire_timeout_ms": 1000, "command_timeout_ms": 250,
                              "retry_delay_ms": 10, "renew_interval_ms": 333, "extra": {"warmup": "true"}}}, 30)
    warm = (time.monotonic() - t1) * 1000
    check("reset: a fresh init", init["type"] == "init_ok", str(init))
    y = a.acquire(key, ttl=2000)
    check("reset: acquires on the new clients", y["type"] == "acquired" and r.cmd("EXISTS", key) == 1, str(y))
    end = time.monotonic() + 3
    while r.addrs_named(first) and time.monotonic() < end:
        time.sleep(0.05)
    check("reset: the first run's connections closed", not r.addrs_named(first), str(r.addrs_named(first)))
    check("reset: the new run's connections named", bool(r.addrs_named("lockchaos-test-c71")))
    check("reset: released", a.release(y["lease"])["type"] == "released" and r.cmd("EXISTS", key) == 0)
    note("reset: start-up to init_ok %.0f ms cold (JVM, classes, warm-up), %.0f ms for a reset process's init", cold, warm)
    a.shutdown()


def basic(make, r, kind):
    """Contention, ping while a lock call blocks, not_owner after the lease expired, names."""
    a, b = make("%s-a" % kind), make("%s-b" % kind)
    for i, d in enumerate((a, b)):
        d.hello_init(10 + i + (0 if kind == "redisson" else 10), [r.addr])
        check("%s: init_ok" % d.label, d.init.get("type") == "init_ok", str(d.init))
    note("%s start-up: hello_ok %.0f / %.0f ms, init_ok %.0f / %.0f ms after the process started (two at once)",
         kind, a.ms_hello, b.ms_hello, a.ms_init, b.ms_init)
    h = a.hello
    check("%s: hello_ok" % kind, h.get("type") == "hello_ok" and h.get("protocol") == 1 and h.get("language") == "java"
          and h.get("version") and h.get("library"), str(h))
    check("%s: connections named" % kind, len(r.addrs_named(a.conn_name)) >= 1, str(r.addrs_named(a.conn_name)))
    key = "lc:t:%s-k0" % kind
    x = a.acquire(key, ttl=2000)
    check("%s: acquire" % kind, x["type"] == "acquired" and x["t1"] >= x["t0"], str(x))
    y = b.acquire(key, ttl=2000)
    check("%s: contended acquire, wait 0: not_acquired" % kind, y["type"] == "not_acquired", str(y))
    # b waits; its ping is answered while the acquire blocks; a releases after 300 ms.
    w = b.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 3000})
    time.sleep(0.05)
    p = b.req({"type": "ping"}, 2)
    check("%s: pong while an acquire blocks" % kind, p["type"] == "pong" and w not in b.replies, str(p))
    time.sleep(0.3)
    rel = a.release(x["lease"])
    check("%s: release" % kind, rel["type"] == "released", str(rel))
    z = b.wait(w, 5)
    waited = (z.get("t1", 0) - z.get("t0", 0)) / 1e6
    check("%s: the waiter gets it after the release" % kind, z["type"] == "acquired" and waited >= 250,
          "%s, waited %.0f ms" % (z, waited))
    note("%s: the waiter acquired %.0f ms into its wait (released at about 350 ms)", kind, waited)
    b.release(z["lease"])
    # A short lease that expires before the release: not_owner.
    k2 = "lc:t:%s-k1" % kind
    s = a.acquire(k2, ttl=300)
    time.sleep(0.6)
    rel = a.release(s["lease"])
    check("%s: release after the lease expired: not_owner" % kind, rel["type"] == "not_owner", str(rel))
    c = a.req({"type": "clock"})
    check("%s: clock_ok" % kind, c["type"] == "clock_ok" and abs(c["wall_ns"] / 1e9 - time.time()) < 5, str(c))
    for d in (a, b):
        check("%s: stdout is protocol lines only" % d.label, not d.bad, str(d.bad[:3]))
        sr, rc = d.shutdown()
        check("%s: shutdown_ok, exit 0" % d.label, sr["type"] == "shutdown_ok" and rc == 0, "%s rc=%s" % (sr, rc))


def reentrant_and_faults(r):
    """Reentrant depth, tokens in the hash, indeterminate on a stopped server."""
    a, b = java_driver("redisson-lease", "lease-a"), java_driver("redisson-lease", "lease-b")
    a.hello_init(1, [r.addr])
    b.hello_init(2, [r.addr])
    key = "lc:t:re-k0"
    x1 = a.acquire(key, ttl=5000)
    x2 = a.acquire(key, ttl=5000)
    check("reentrant: depth 1 then 2", x1.get("depth") == 1 and x2.get("depth") == 2 and x1["lease"] != x2["lease"],
          "%s %s" % (x1, x2))
    fields = r.cmd("HGETALL", key)
    check("reentrant: the token is the hash field, the count 2", fields == [x1.get("token"), "2"], str(fields))
    check("reentrant: another client is refused", b.acquire(key)["type"] == "not_acquired")
    check("reentrant: release one level", a.release(x2["lease"])["type"] == "released")
    check("reentrant: still held at depth 1", r.cmd("HGET", key, x1.get("token")) == "1" and
          b.acquire(key)["type"] == "not_acquired")
    check("reentrant: release the last level", a.release(x1["lease"])["type"] == "released" and r.cmd("EXISTS", key) == 0)
    # The server stopped past command_timeout_ms (250): indeterminate, not a refusal.
    held = a.acquire("lc:t:re-k1", ttl=5000)
    os.kill(r.proc.pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        y = a.acquire("lc:t:re-k2", ttl=5000, timeout=5)
        ms_acq = (time.monotonic() - t) * 1000
        z = a.release(held["lease"], timeout=5)
        p = a.req({"type": "ping"}, 2)
    finally:
        os.kill(r.proc.pid, signal.SIGCONT)
    check("server stopped: acquire indeterminate", y["type"] == "indeterminate", str(y))
    check("server stopped: release indeterminate", z["type"] == "indeterminate", str(z))
    check("server stopped: ping still answered", p["type"] == "pong")
    note("server SIGSTOPped: indeterminate acquire after %.0f ms (command_timeout_ms 250): %s", ms_acq,
         y.get("error", "")[:90])
    for d in (a, b):
        d.shutdown()


def watchdog(r):
    """Renewals raise PTTL; a SIGSTOP of the JVM past the watchdog's timeout stops them and the key expires."""
    wd_ms = 1200
    mon = Monitor(r.port)
    w = java_driver("redisson", "watchdog")
    o = java_driver("redisson", "watchdog-other")
    w.hello_init(5, [r.addr], extra={"watchdog_timeout_ms": wd_ms})
    o.hello_init(15, [r.addr], extra={"watchdog_timeout_ms": wd_ms})
    mine = r.addrs_named(w.conn_name)
    key = "lc:t:wd-k0"
    x = w.acquire(key)
    check("watchdog: acquire", x["type"] == "acquired", str(x))
    samples = []
    t_end = time.monotonic() + 2.0
    while time.monotonic() < t_end:
        samples.append(r.cmd("PTTL", key))
        time.sleep(0.05)
    ups = sum(1 for p, q in zip(samples, samples[1:]) if q > p + 50)
    check("watchdog: PTTL goes back up (renewals)", ups >= 2 and min(samples) > 0, str(samples))
    t_stop = time.time()
    os.kill(w.proc.pid, signal.SIGSTOP)
    gone_at = None
    taken = None
    pause_s = 2.5
    try:
        while time.time() < t_stop + pause_s:
            if gone_at is None and r.cmd("PTTL", key) == -2:
                gone_at = time.time()
                # The paused client still holds its lease; another one takes the lock: two holders.
                taken = o.acquire(key)
            time.sleep(0.02)
    finally:
        os.kill(w.proc.pid, signal.SIGCONT)
    t_cont = time.time()
    check("watchdog: another client acquires while the paused one holds its lease",
          taken is not None and taken["type"] == "acquired", str(taken))
    mine |= r.addrs_named(w.conn_name)
    renew_before = [l for l in mon.lines if l[1] in mine and l[0] < t_stop and l[2] in ("EVAL", "EVALSHA")]
    check("watchdog: MONITOR shows the renewal scripts before the stop", len(renew_before) >= 3, str(len(renew_before)))
    during = [l for l in mon.lines if l[1] in mine and t_stop + 0.05 < l[0] < t_cont]
    check("watchdog: no command from the stopped JVM", not during, str(during[:5]))
    check("watchdog: the key expires during the pause", gone_at is not None and gone_at - t_stop < wd_ms / 1000 + 0.25,
          "gone %.2f s after SIGSTOP" % ((gone_at or 0) - t_stop))
    note("watchdog %d ms: PTTL rose %d times in 2 s (%d renewal scripts in MONITOR before the stop); SIGSTOP %.1f s: "
         "key gone %.0f ms after the stop, %d commands from the JVM during it", wd_ms, ups, len(renew_before), pause_s,
         ((gone_at or 0) - t_stop) * 1000, len(during))
    time.sleep(0.5)  # the resumed watchdog's late renewal finds the other's field, not its own
    rel = w.release(x["lease"])
    check("watchdog: release after the pause: not_owner", rel["type"] == "not_owner", str(rel))
    if taken and taken.get("token"):
        check("watchdog: the other client's hold survives the resumed one", r.cmd("HGET", key, taken["token"]) == "1"
              and r.cmd("PTTL", key) > 0)
    mon.close()
    w.shutdown()
    o.shutdown()


def cancel(make, kind, hold, stops_io=True, extra=None):
    """The cancel extension: a waiting acquire interrupted, two at once (the second on a thread of its
    own, or queued behind the first: a kit without scopes), a release cancelled in flight, a cancel of
    an answered or unknown request; the next request runs normally. hold(r, key) takes key at the
    server as another client of the lock would. stops_io: the interrupt ends a call waiting on its
    server (Redisson's futures); Jedis' socket read does not heed it, and its release ends at its read
    timeout (then it threw with the interrupt delivered: cancelled). extra: the lock options (the
    Redisson driver's api: try-lock and lock-interruptibly heed an interrupt, lock() does not)."""
    r = Redis()  # its own server: the release test stops it
    d = make("%s-cancel" % kind)
    d.hello_init(30, [r.addr], cmd_timeout=1000, extra=extra)
    check("%s: hello lists the cancel extension" % kind, "cancel" in d.hello.get("extensions", []), str(d.hello))

    def before(first, then):
        """The reply first came before the reply then (by arrival)."""
        ids = [rid for rid, _ in d.order]
        return first in ids and then in ids and ids.index(first) < ids.index(then)

    # A contended acquire, cancelled 100 ms into its wait of 3 s.
    key = "lc:t:%s-cancel-k0" % kind
    hold(r, key)
    t = time.monotonic()
    a = d.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 3000})
    time.sleep(0.1)
    c = d.send({"type": "cancel", "of": a})
    ack = d.wait(c, 2)
    x = d.wait(a, 5)
    ms = (time.monotonic() - t) * 1000
    check("%s: cancel of a waiting acquire: cancel_ok delivered" % kind, ack["type"] == "cancel_ok" and
          ack.get("delivered") is True, str(ack))
    check("%s: cancel_ok before the acquire's answer" % kind, before(c, a), str(d.order[-3:]))
    check("%s: the acquire answers cancelled, well before its wait_ms" % kind, x["type"] == "cancelled" and
          x.get("error") and x["t1"] >= x["t0"] and ms < 1500, "%s, %.0f ms" % (x, ms))
    note("%s: acquire (wait_ms 3000) cancelled 100 ms in: answered %.0f ms after it was sent, the call ran %.0f ms: %s",
         kind, ms, (x.get("t1", 0) - x.get("t0", 0)) / 1e6, x.get("error", "")[:120])
    # The interrupt flag is cleared: the next acquire, of a free key, acquires (a waiting one too).
    free = "lc:t:%s-cancel-free" % kind
    y = d.acquire(free, ttl=2000, wait=1000)
    check("%s: the next acquire after a cancel acquires" % kind, y["type"] == "acquired", str(y))
    rel = d.release(y["lease"]) if y["type"] == "acquired" else {}
    check("%s: and releases" % kind, rel.get("type") == "released", str(rel))
    # A cancel of an answered request, and of one never sent: delivered false, nothing else.
    late = d.req({"type": "cancel", "of": a}, 2)
    unknown = d.req({"type": "cancel", "of": 987654321}, 2)
    check("%s: cancel of an answered request: delivered false" % kind, late["type"] == "cancel_ok" and
          late.get("delivered") is False, str(late))
    check("%s: cancel of an unknown request: delivered false" % kind, unknown["type"] == "cancel_ok" and
          unknown.get("delivered") is False, str(unknown))
    z = d.acquire(free, ttl=2000, wait=0)
    check("%s: an acquire after those cancels acquires" % kind, z["type"] == "acquired", str(z))
    # Two acquires at once, both cancelled: the second waits on a thread of its own (the Redisson
    # driver: each scope on its own thread) or is queued behind the first and starts cancelled (the kit).
    t = time.monotonic()
    a1 = d.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 3000})
    a2 = d.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 3000})
    time.sleep(0.1)
    c2 = d.send({"type": "cancel", "of": a2})
    ack2 = d.wait(c2, 2)
    c1 = d.send({"type": "cancel", "of": a1})
    ack1 = d.wait(c1, 2)
    x1, x2 = d.wait(a1, 5), d.wait(a2, 5)
    ms = (time.monotonic() - t) * 1000
    check("%s: cancel of two acquires at once: both delivered" % kind, ack2.get("delivered") is True and
          ack1.get("delivered") is True and before(c2, a2) and before(c1, a1), "%s %s" % (ack2, ack1))
    check("%s: both answer cancelled" % kind, x1["type"] == "cancelled" and
          x2["type"] == "cancelled" and ms < 2500, "%s %s, %.0f ms" % (x1, x2, ms))
    note("%s: the second of two acquires at once, cancelled: %s after %.0f ms of its call: %s", kind, x2["type"],
         (x2.get("t1", 0) - x2.get("t0", 0)) / 1e6, x2.get("error", "")[:120])
    # A release in flight (its server stopped), cancelled: cancelled, and its lease is over.
    os.kill(r.proc.pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        rr = d.send({"type": "release", "lease": z["lease"]})
        time.sleep(0.1)
        c3 = d.send({"type": "cancel", "of": rr})
        ack3 = d.wait(c3, 2)
        x3 = d.wait(rr, 5)
        ms = (time.monotonic() - t) * 1000
    finally:
        os.kill(r.proc.pid, signal.SIGCONT)
    check("%s: cancel of a release in flight: delivered, then cancelled" % kind, ack3.get("delivered") is True and
          before(c3, rr) and x3["type"] == "cancelled" and (ms < 900 or not stops_io), "%s %s, %.0f ms" % (ack3, x3, ms))
    note("%s: a release in flight (its server stopped) cancelled 100 ms in: %s %.0f ms after it was sent: %s", kind,
         x3["type"], ms, x3.get("error", "")[:120])
    again = d.release(z["lease"])
    check("%s: a cancelled release's lease is over" % kind, again["type"] == "error", str(again))
    w = d.acquire(free + "2", ttl=2000, wait=500)
    check("%s: and the next acquire acquires" % kind, w["type"] == "acquired", str(w))
    check("%s: stdout is protocol lines only (cancel)" % kind, not d.bad, str(d.bad[:3]))
    d.shutdown()


def hold_rlock(r, key):
    """Another Redisson client's hold: its field in the lock's hash, 10 s."""
    r.cmd("HSET", key, "another-client:1", "1")
    r.cmd("PEXPIRE", key, "10000")


def hold_set(r, key):
    r.cmd("SET", key, "another-client", "PX", "10000")



def redlock_interrupted_spin():
    """Redisson's RedissonRedLock (RedissonMultiLock) on a thread interrupted while a master's lock script
    is on the wire (the cancel extension's Thread.interrupt(), a caller's Future.cancel(true)): Redisson's
    sync get() sets the interrupt flag again and throws; the multi-lock swallows each master's exception and
    tries again at once, every attempt failing the same way after its script was sent. lock() (api lock)
    never returns: thousands of lock scripts a second, each re-entering the key, which stays held for the
    life of the process. RLock's lock() throws instead (its kept level is the interrupted-tryLock finding)."""
    r = Redis()
    mon = Monitor(r.port)
    d = java_driver("redisson-redlock", "redlock-spin")
    d.hello_init(63, [r.addr], topology="independent", cmd_timeout=1000, extra={"master_timeout_ms": "25", "api": "lock"})
    w = d.acquire("lc:t:spin-warm", wait=500)
    d.release(w["lease"])
    mine = r.addrs_named(d.conn_name)
    # Its lock script in flight, for the interrupt to meet: with the server stopped nothing is
    # answered, so the cancel waits (0.3 s) for the JVM to have sent it. On a loaded machine the
    # interrupt can still come before the script (at 50 ms a CI rehearsal's did, and lock()
    # acquired after the SIGCONT): such a try is released and made again, on a new key, 4 at most.
    for attempt in range(4):
        key = "lc:t:spin%d" % attempt
        os.kill(r.proc.pid, signal.SIGSTOP)
        try:
            a = d.send({"type": "acquire", "key": key, "ttl_ms": 500, "wait_ms": 800})
            time.sleep(0.3 + 0.2 * attempt)
            ack = d.req({"type": "cancel", "of": a}, 2)
            time.sleep(0.05)
        finally:
            os.kill(r.proc.pid, signal.SIGCONT)
        x = d.wait(a, 5)
        if x["type"] != "acquired":
            break
        d.release(x["lease"])
    t0 = time.time()
    time.sleep(0.6)  # past wait_ms: lock() goes on
    n0 = sum(1 for m in mon.lines if m[1] in mine and m[2] in ("EVAL", "EVALSHA"))
    held0 = r.cmd("HGETALL", key)
    time.sleep(0.5)
    n1 = sum(1 for m in mon.lines if m[1] in mine and m[2] in ("EVAL", "EVALSHA"))
    held1, pttl = r.cmd("HGETALL", key), r.cmd("PTTL", key)
    # Reset (warm drivers) is refused: the answered call still runs on its thread, and a process kept
    # warm would spin through every later run (an explore of redisson-redlock ran at load 40 so).
    refused = d.req({"type": "reset"})
    d.shutdown()  # halts the JVM: the loop ends with it
    count0 = int(held0[1]) if len(held0) == 2 else 0
    count = int(held1[1]) if len(held1) == 2 else 0
    rate = (count - count0) / 0.5  # by the server's own count (MONITOR's reader lags at this rate)
    check("redlock api=lock interrupted in its lock script: the cancel is delivered, the acquire answers at wait_ms",
          ack.get("delivered") is True and x["type"] in ("indeterminate", "not_acquired"), "%s %s" % (ack, x))
    check("redlock api=lock interrupted: lock() goes on spinning after wait_ms, each lock script re-entering the "
          "key (hold count over 1000 and climbing), which it keeps", count0 > 1000 and count > count0 + 50 and pttl > 0,
          "key %s then %s, PTTL %s" % (held0, held1, pttl))
    check("redlock api=lock interrupted: reset refused while its lock thread still runs the answered call",
          refused["type"] == "error" and "still in a call" in refused.get("error", ""), str(refused))
    note("RedissonRedLock.lock(lease) interrupted with its lock script on the wire: %s at wait_ms; the key's hold count "
         "%d 0.6 s later and %d 1.1 s later (%.0f re-entries a second; %d lock scripts in MONITOR by then), PTTL %s: "
         "held for the life of the process", x["type"], count0, count, rate, n1, pttl)
    mon.close()


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def faketime(r):
    """A client clock fault: the JVM under libfaketime, its clocks read with clock, set in flight."""
    if not os.path.exists(FAKETIME_LIB):
        print("skip faketime: %s missing (apt-get install faketime)" % FAKETIME_LIB)
        return
    stamp = tempfile.NamedTemporaryFile("w", suffix=".faketime", delete=False)
    stamp.write("+5s\n")
    stamp.close()
    env = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=stamp.name, FAKETIME_NO_CACHE="1")
    d = Driver(["sh", "run.sh", "--lock", "redisson"], HERE, "faketime", env=env)
    try:
        d.hello_init(6, [r.addr], extra={"watchdog_timeout_ms": 1500}, cmd_timeout=1000)

        def offsets():
            m0, w0 = time.monotonic_ns(), time.time_ns()
            c = d.req({"type": "clock"})
            m1, w1 = time.monotonic_ns(), time.time_ns()
            return (c["wall_ns"] - (w0 + w1) / 2) / 1e9, (c["mono_ns"] - (m0 + m1) / 2) / 1e9

        w_a, m_a = offsets()
        check("faketime: the driver's wall clock is 5 s ahead", abs(w_a - 5) < 0.5, "%.3f s" % w_a)
        x = d.acquire("lc:t:ft-k0")
        with open(stamp.name, "w") as f:
            f.write("+65s\n")
        time.sleep(0.2)
        w_b, m_b = offsets()
        check("faketime: a jump in flight (+5 s -> +65 s) is seen", abs(w_b - 65) < 0.5, "%.3f s" % w_b)
        time.sleep(2)
        pttl = r.cmd("PTTL", "lc:t:ft-k0")
        rel = d.release(x["lease"])
        check("faketime: the lock works under it", x["type"] == "acquired", "%s %s" % (x, rel))
        note("libfaketimeMT FAKETIME_TIMESTAMP_FILE: wall offset %+.3f s, monotonic offset %+.3f s (libfaketime fakes "
             "CLOCK_MONOTONIC too); after the jump %+.3f / %+.3f s; 2 s later PTTL %s (watchdog 1500 ms), release %s",
             w_a, m_a, w_b, m_b, pttl, rel["type"])
        d.shutdown()
    finally:
        os.unlink(stamp.name)


def sentinel_and_cluster():
    """Redisson's own configuration for Sentinel and Redis Cluster, dialling the addresses given."""
    m = Redis()
    sen = Redis(sentinel_of=m)
    d = java_driver("redisson", "sentinel")
    d.conn_name = "lockchaos-test-c20"
    init = d.req({"type": "hello", "protocol": 1}, 30) and d.req(
        {"type": "init", "client": 20, "conn_name": d.conn_name, "key_prefix": "lc:t:", "topology": "sentinel",
         "endpoints": [{"addr": m.addr, "master_name": "mymaster", "sentinels": [sen.addr]}],
         "options": {"ttl_ms": 1000, "command_timeout_ms": 1000}}, 30)
    check("sentinel: init_ok", init["type"] == "init_ok", str(init))
    x = d.acquire("lc:t:sen-k0")
    check("sentinel: acquire on the master", x["type"] == "acquired" and m.cmd("EXISTS", "lc:t:sen-k0") == 1, str(x))
    check("sentinel: named on the master and on the sentinel", bool(m.addrs_named(d.conn_name))
          and bool(sen.addrs_named(d.conn_name)), "%s %s" % (m.addrs_named(d.conn_name), sen.addrs_named(d.conn_name)))
    d.shutdown()
    nodes = [Redis("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf") for _ in range(3)]
    out = subprocess.run(["redis-cli", "--cluster", "create"] + [n.addr for n in nodes] + ["--cluster-yes"],
                         capture_output=True, text=True, timeout=20)
    for _ in range(100):
        if all("cluster_state:ok" in n.cmd("CLUSTER", "INFO") for n in nodes):
            break
        time.sleep(0.1)
    c = java_driver("redisson", "cluster")
    c.conn_name = "lockchaos-test-c21"
    init = c.req({"type": "hello", "protocol": 1}, 30) and c.req(
        {"type": "init", "client": 21, "conn_name": c.conn_name, "key_prefix": "lc:t:", "topology": "cluster",
         "endpoints": [{"addr": nodes[0].addr, "cluster": [n.addr for n in nodes]}],
         "options": {"ttl_ms": 1000, "command_timeout_ms": 1000}}, 30)
    check("cluster: init_ok", init["type"] == "init_ok", "%s %s" % (init, out.stdout[-300:]))
    held = []
    for k in ("lc:t:cl-a", "lc:t:cl-b", "lc:t:cl-c", "lc:t:cl-d"):
        x = c.acquire(k)
        held.append(x["type"] == "acquired" and any(n.cmd("CLUSTER", "COUNTKEYSINSLOT", n.cmd("CLUSTER", "KEYSLOT", k))
                                                   for n in nodes))
        c.release(x["lease"])
    check("cluster: acquire and release across slots", all(held), str(held))
    check("cluster: named on every node", all(n.addrs_named(c.conn_name) for n in nodes))
    c.shutdown()


def redlock():
    rs = [Redis() for _ in range(3)]
    a, b = java_driver("redisson-redlock", "redlock-a"), java_driver("redisson-redlock", "redlock-b")
    addrs = [x.addr for x in rs]
    a.hello_init(7, addrs, topology="independent")
    b.hello_init(8, addrs, topology="independent")
    check("redlock: hello multi-node", "multi-node" in a.hello.get("capabilities", []), str(a.hello))
    check("redlock: hello lists the cancel extension", "cancel" in a.hello.get("extensions", []), str(a.hello))
    check("redlock: named on every master", all(x.addrs_named(a.conn_name) for x in rs))
    key = "lc:t:rl-k0"
    x = a.acquire(key, ttl=3000)
    check("redlock: acquire", x["type"] == "acquired", str(x))
    check("redlock: the key on every master", [s.cmd("EXISTS", key) for s in rs] == [1, 1, 1])
    check("redlock: contended: not_acquired", b.acquire(key, ttl=3000)["type"] == "not_acquired")
    check("redlock: release", a.release(x["lease"])["type"] == "released" and [s.cmd("EXISTS", key) for s in rs] == [0, 0, 0])
    y = b.acquire(key, ttl=3000)
    check("redlock: then the other gets it", y["type"] == "acquired", str(y))
    bad = a.req({"type": "init", "client": 9, "conn_name": "x", "key_prefix": "p", "topology": "independent",
                 "endpoints": [{"addr": addrs[0]}], "options": {}})
    check("init twice: error", bad["type"] == "error")
    for d in (a, b):
        d.shutdown()
    # A cancel with the lock file's options (retry=driver: tryLock(0, ttl) and a sleep between, which
    # the interrupt ends; RedissonRedLock.tryLock(wait, ttl) swallows it and waits out wait_ms).
    c = java_driver("redisson-redlock", "redlock-cancel")
    c.hello_init(9, addrs, topology="independent", extra={"master_timeout_ms": "25", "warmup": "true", "retry": "driver",
                                                            "api": "try-lock"})
    key = "lc:t:rl-cancel"
    for s in rs:
        hold_rlock(s, key)
    t = time.monotonic()
    w = c.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 3000})
    time.sleep(0.1)
    ack = c.req({"type": "cancel", "of": w}, 2)
    x = c.wait(w, 5)
    ms = (time.monotonic() - t) * 1000
    ids = [rid for rid, _ in c.order]
    check("redlock (retry=driver): a waiting acquire cancelled: cancel_ok first, then cancelled",
          ack.get("delivered") is True and ids.index(ack["in_reply_to"]) < ids.index(w) and x["type"] == "cancelled"
          and ms < 1500, "%s %s, %.0f ms" % (ack, x, ms))
    note("redlock (retry=driver): acquire (wait_ms 3000) cancelled 100 ms in: %s %.0f ms after it was sent: %s",
         x["type"], ms, x.get("error", "")[:80])
    y = c.acquire("lc:t:rl-cancel-free", ttl=2000, wait=500)
    check("redlock (retry=driver): the next acquire acquires", y["type"] == "acquired", str(y))
    c.shutdown()


APIS = {"redisson": ["lock", "try-lock", "lock-interruptibly"], "redisson-lease": ["lock-lease", "try-lock-lease"],
        "redisson-redlock": ["lock", "try-lock"]}
UNBOUNDED = ("lock", "lock-lease", "lock-interruptibly")  # lock() has no bound: the driver's wait_ms


def start_all(specs):
    """Starts a driver per (lock, label, client, addrs, topology, extra) at once (the JVMs start side by side)."""
    ds = [java_driver(lock, label) for lock, label, _, _, _, _ in specs]
    errs = []

    def init(d, spec):
        try:
            d.hello_init(spec[2], spec[3], topology=spec[4], extra=spec[5])
        except Exception as e:  # noqa: BLE001 (reported by the caller's checks)
            errs.append(repr(e))
            d.init = {"type": "error", "error": repr(e)}
    ts = [threading.Thread(target=init, args=(d, s)) for d, s in zip(ds, specs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return ds


def exists_all(servers, key):
    return [s.cmd("EXISTS", key) for s in servers]


def gone_within(servers, key, seconds):
    """The key is gone from every server within seconds (a late win of a waiter is unlocked at once)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(exists_all(servers, key)):
            return True
        time.sleep(0.005)
    return False


def api_modes(lock, servers, topology="single", extra=None):
    """Each API mode of lock (the lock option api): hello lists them, the default first; in each, an
    acquire enters the idiom's scope and a release leaves it (the key gone); the held key is refused
    to another client at once (wait_ms 0) and after a wait (the unbounded modes, lock(), bounded by
    the driver at wait_ms: not_acquired, and the waiter's late win, after the release, unlocked at
    once on its thread); then the other client gets it. An unknown api is refused at init."""
    modes = APIS[lock]
    addrs = [s.addr for s in servers]
    specs = []
    for i, mode in enumerate(modes):
        for j, side in enumerate("ab"):
            specs.append((lock, "%s-%s-%s" % (lock, mode, side), 40 + 2 * i + j, addrs, topology,
                          dict(extra or {}, api=mode)))
    ds = start_all(specs)
    h = ds[0].hello
    check("%s: hello apis %s, the default first, and the option api" % (lock, modes),
          h.get("apis") == modes and "api" in h.get("options", []), str(h))
    check("%s: hello lists the throw and sigterm extensions" % lock,
          {"cancel", "throw", "sigterm"} <= set(h.get("extensions", [])), str(h))
    for i, mode in enumerate(modes):
        a, b = ds[2 * i], ds[2 * i + 1]
        tag = "%s api=%s" % (lock, mode)
        if a.init.get("type") != "init_ok" or b.init.get("type") != "init_ok":
            check("%s: init_ok" % tag, False, "%s %s" % (a.init, b.init))
            continue
        key = "lc:t:%s-%s" % (lock, mode)
        x = a.acquire(key, ttl=3000, wait=1000)
        check("%s: acquire" % tag, x["type"] == "acquired" and x.get("depth") == 1 and all(exists_all(servers, key)),
              "%s %s" % (x, exists_all(servers, key)))
        if x["type"] != "acquired":
            continue
        y = b.acquire(key, ttl=3000, wait=0)
        check("%s: held: refused to another client at once (wait_ms 0)" % tag, y["type"] == "not_acquired", str(y))
        t = time.monotonic()
        z = b.acquire(key, ttl=3000, wait=400)
        ms = (time.monotonic() - t) * 1000
        check("%s: held: refused after wait_ms 400" % tag, z["type"] == "not_acquired" and 380 <= ms < 1400,
              "%s after %.0f ms" % (z, ms))
        rel = a.release(x["lease"])
        gone = gone_within(servers, key, 1.5)
        check("%s: release: released, the key gone" % tag, rel["type"] == "released" and gone, "%s gone %s" % (rel, gone))
        if mode in UNBOUNDED:
            # b's lock() went on after its answer: it wins the key a's release freed, and unlocks it at
            # once. lockInterruptibly() was interrupted at wait_ms instead (its caller's Future.cancel(true)).
            want = "ended" if mode == "lock-interruptibly" else "unlocked at once"
            end = time.monotonic() + 2
            while want not in b.stderr() and time.monotonic() < end:
                time.sleep(0.02)
            late = [l for l in b.stderr().splitlines() if want in l]
            check("%s: the waiter's call after wait_ms: %s" % (tag, "interrupted, it ended" if want == "ended" else
                  "it went on, and its late win is unlocked at once"), bool(late), b.stderr()[-400:])
            note("%s: wait_ms 400 answered %s after %.0f ms; %s", tag, z["type"], ms, (late or ["-"])[0][18:170])
            gone = gone_within(servers, key, 1.5)
            check("%s: and the key is gone after it" % tag, gone, str(exists_all(servers, key)))
        w = b.acquire(key, ttl=3000, wait=1000)
        check("%s: then the other client acquires" % tag, w["type"] == "acquired", str(w))
        if w["type"] == "acquired":
            b.release(w["lease"])
    bad = java_driver(lock, "%s-bad-api" % lock)
    e = bad.hello_init(59, addrs, topology=topology, extra=dict(extra or {}, api="no-such-mode"))
    check("%s: an unknown api is an init error naming it" % lock, e["type"] == "error" and "no-such-mode" in e.get("error", "")
          and all(m in e.get("error", "") for m in modes), str(e))
    for d in ds + [bad]:
        check("%s: stdout is protocol lines only" % d.label, not d.bad, str(d.bad[:3]))
        d.shutdown()


def lock_idioms_interrupted(r):
    """An interrupt (the cancel extension, a caller's Future.cancel(true)) in each RLock idiom's wait:
    try-lock's tryLock and lock-interruptibly throw InterruptedException (cancelled at once); lock()
    swallows it in its wait for a release and goes on (answered at wait_ms). And lock()'s wait_ms
    passing while its lock script is on the wire (the server stopped) is indeterminate, not a no."""
    ds = start_all([("redisson", "intr-" + m, 60 + i, [r.addr], "single", {"api": m})
                    for i, m in enumerate(("lock", "lock-interruptibly"))])
    key = "lc:t:intr"
    hold_rlock(r, key)
    for d, mode in zip(ds, ("lock", "lock-interruptibly")):
        t = time.monotonic()
        a = d.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 1500})
        time.sleep(0.15)
        ack = d.req({"type": "cancel", "of": a}, 2)
        x = d.wait(a, 5)
        ms = (time.monotonic() - t) * 1000
        if mode == "lock":
            check("redisson api=lock: a cancel is delivered, lock() swallows it and answers at its wait_ms",
                  ack.get("delivered") is True and x["type"] == "not_acquired" and ms >= 1400, "%s %s %.0f ms" % (ack, x, ms))
        else:
            check("redisson api=lock-interruptibly: a cancel ends its wait: cancelled",
                  ack.get("delivered") is True and x["type"] == "cancelled" and ms < 1000, "%s %s %.0f ms" % (ack, x, ms))
        note("redisson api=%s: cancelled 150 ms into a wait_ms of 1500: %s after %.0f ms %s", mode, x["type"], ms,
             x.get("error", "")[:80])
    r.cmd("DEL", key)
    for d in ds:
        d.shutdown()
    # wait_ms passing with lock()'s script in flight: the server stopped, command_timeout_ms 1000 > wait_ms 300.
    s = Redis()
    d = java_driver("redisson", "deadline-in-flight")
    d.hello_init(62, [s.addr], cmd_timeout=1000, extra={"api": "lock"})
    warm = d.acquire("lc:t:warm", wait=500)
    d.release(warm["lease"])
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        x = d.acquire("lc:t:inflight", wait=300, timeout=5)
        ms = (time.monotonic() - t) * 1000
        time.sleep(1.0)  # the lock script times out (command_timeout_ms) on the thread that went on
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
    check("redisson api=lock: wait_ms passed with the lock script on the wire: indeterminate at wait_ms",
          x["type"] == "indeterminate" and 280 <= ms < 900, "%s %.0f ms" % (x, ms))
    ended = [l for l in d.stderr().splitlines() if "answered at its wait_ms, ended" in l]
    check("redisson api=lock: the call went on and ended by itself, logged", bool(ended), d.stderr()[-300:])
    y = d.acquire("lc:t:inflight2", wait=500)
    check("redisson api=lock: the next acquire acquires", y["type"] == "acquired", str(y))
    d.shutdown()


def throw(r, servers3):
    """The throw extension: a release with throw raises a RuntimeException inside the scope; the idiom's
    finally unlocks (the key gone) and the exception comes out (raised true); a re-entry's throw leaves
    the outer scope held; after the lease expired, the finally's unlock throws IllegalMonitorStateException,
    which replaces the application's exception (not_owner, raised false)."""
    specs = [("redisson", "throw-watchdog", 70, [r.addr], "single", None),
             ("redisson-lease", "throw-lease", 71, [r.addr], "single", None),
             ("redisson", "throw-try-lock", 72, [r.addr], "single", {"api": "try-lock"}),
             ("redisson-redlock", "throw-redlock", 73, [s.addr for s in servers3], "independent",
              {"master_timeout_ms": "25", "warmup": "true"})]
    ds = start_all(specs)
    for d, spec in zip(ds, specs):
        srv = servers3 if spec[0] == "redisson-redlock" else [r]
        tag = "%s (%s)" % (spec[0], (spec[5] or {}).get("api", "default api"))
        key = "lc:t:throw-%s" % d.label
        x = d.acquire(key, ttl=3000, wait=500)
        t = d.req({"type": "release", "lease": x["lease"], "throw": "lockchaos: an error in the critical section"})
        check("%s: throw: released, raised, the key gone" % tag, t["type"] == "released" and t.get("raised") is True
              and not any(exists_all(srv, key)) and t["t1"] >= t["t0"], "%s %s" % (t, exists_all(srv, key)))
        again = d.release(x["lease"])
        check("%s: throw: the lease is over" % tag, again["type"] == "error", str(again))
        if spec[0] == "redisson-redlock":
            continue
        x1 = d.acquire(key, ttl=3000, wait=500)
        x2 = d.acquire(key, ttl=3000, wait=500)
        t2 = d.req({"type": "release", "lease": x2["lease"], "throw": "inner"})
        count = r.cmd("HGET", key, x1.get("token"))
        check("%s: throw in a re-entry: released, raised; the outer level held" % tag, x2.get("depth") == 2 and
              t2["type"] == "released" and t2.get("raised") is True and count == "1", "%s %s count %s" % (x2, t2, count))
        t1 = d.req({"type": "release", "lease": x1["lease"], "throw": "outer"})
        check("%s: then the outer throw: released, the key gone" % tag, t1["type"] == "released" and t1.get("raised") is True
              and r.cmd("EXISTS", key) == 0, str(t1))
    d = ds[1]  # the lease lock: a lease that expires before the throw
    key = "lc:t:throw-expired"
    x = d.acquire(key, ttl=300, wait=500)
    time.sleep(0.6)
    t = d.req({"type": "release", "lease": x["lease"], "throw": "too late"})
    check("redisson-lease: throw after the lease expired: not_owner, raised false (the unlock's exception replaced it)",
          t["type"] == "not_owner" and t.get("raised") is False and "IllegalMonitorStateException" in t.get("error", ""), str(t))
    note("redisson-lease: throw after the lease expired: %s raised=%s: %s", t["type"], t.get("raised"), t.get("error", "")[:110])
    for d in ds:
        check("%s: stdout is protocol lines only (throw)" % d.label, not d.bad, str(d.bad[:3]))
        d.shutdown()


def sigterm(servers3):
    """The sigterm extension: SIGTERM runs the JVM's shutdown hooks, the application's redisson.shutdown();
    the process exits at once; a thread holding a lock is halted in its scope (its finally does not run):
    the key stays until its lease (the watchdog's, from its last renewal) and no command of the process
    reaches the server after the signal; a thread blocked in lock() for another key is halted too."""
    r = Redis()
    mon = Monitor(r.port)
    wd, lease = 1500, 4000
    specs = [("redisson", "sigterm-watchdog", 80, [r.addr], "single", {"watchdog_timeout_ms": str(wd)}),
             ("redisson-lease", "sigterm-lease", 81, [r.addr], "single", None),
             ("redisson", "sigterm-other", 82, [r.addr], "single", None),
             ("redisson-redlock", "sigterm-redlock", 83, [s.addr for s in servers3], "independent",
              {"master_timeout_ms": "25", "warmup": "true"})]
    w, l, o, rl = start_all(specs)
    k1, k2, k3, k4 = "lc:t:term-held", "lc:t:term-other", "lc:t:term-lease", "lc:t:term-redlock"
    x = w.acquire(k1, wait=500)
    y = o.acquire(k2, ttl=5000, wait=500)
    blocked = w.send({"type": "acquire", "key": k2, "ttl_ms": 1000, "wait_ms": 5000})  # lock() waits for o's key
    z = l.acquire(k3, ttl=lease, wait=500)
    v = rl.acquire(k4, ttl=lease, wait=500)
    check("sigterm: the holds", all(m["type"] == "acquired" for m in (x, y, z, v)), "%s %s %s %s" % (x, y, z, v))
    time.sleep(0.7)  # a renewal of k1 (every wd/3)
    mine = r.addrs_named(w.conn_name)
    t0 = time.time()
    os.kill(w.proc.pid, signal.SIGTERM)
    try:
        rc = w.proc.wait(4)
    except subprocess.TimeoutExpired:
        rc = None
    exit_s = time.time() - t0
    pttl = r.cmd("PTTL", k1)
    check("sigterm (redisson, holding one key, blocked in lock() for another): the process exits (143) within 2 s",
          rc == 143 and exit_s < 2, "rc %s after %.2f s" % (rc, exit_s))
    check("sigterm: the held key stays (its finally did not run)", pttl > 0, str(pttl))
    check("sigterm: the blocked acquire is not answered", blocked not in w.replies, str(w.replies.get(blocked)))
    others = []
    for d, key, srv in ((l, k3, [r]), (rl, k4, servers3)):
        t1 = time.time()
        os.kill(d.proc.pid, signal.SIGTERM)
        try:
            drc = d.proc.wait(4)
        except subprocess.TimeoutExpired:
            drc = None
        others.append((d, key, srv, drc, time.time() - t1, [s.cmd("PTTL", key) for s in srv]))
    hook = [l for l in w.stderr().splitlines() if "shutdown" in l]
    check("sigterm: the hook ran redisson.shutdown(), logged", any("redisson.shutdown() returned" in h for h in hook), "\n".join(hook))
    for h in hook:
        note("sigterm hook: %s", h[h.find("lockchaos driver:") + 18:][:220])
    end = time.time() + wd / 1000 + 1
    while r.cmd("EXISTS", k1) and time.time() < end:
        time.sleep(0.02)
    gone_s = time.time() - t0
    check("sigterm: the key expires by itself within the watchdog's timeout", r.cmd("EXISTS", k1) == 0 and gone_s < wd / 1000 + 0.3,
          "gone %.2f s after the signal" % gone_s)
    after = [m for m in mon.lines if m[1] in mine and m[0] > t0 + 0.01]
    check("sigterm: no command from the terminated process after the signal", not after, str(after[:5]))
    note("sigterm: redisson (watchdog %d ms) exited %s in %.0f ms; its key's PTTL then %d, gone %.0f ms after the signal; "
         "%d commands from it after the signal", wd, rc, exit_s * 1000, pttl, gone_s * 1000, len(after))
    for d, key, srv, rc, exit_s, pttls in others:
        check("sigterm (%s, holding): exits (143) within 2 s, the key kept until its lease" % d.label,
              rc == 143 and exit_s < 2 and all(0 < p <= lease for p in pttls), "rc %s %.2f s, PTTL %s" % (rc, exit_s, pttls))
        note("sigterm: %s exited %s in %.0f ms; PTTL of its key(s) then %s (lease %d)", d.label, rc, exit_s * 1000, pttls, lease)
    mon.close()
    o.shutdown()


def example_scoped(r):
    """The kit's ScopedLock hook on the worked example: its api, throw and sigterm."""
    a = example_driver("example-scoped")
    a.hello_init(90, [r.addr])
    h = a.hello
    check("example: hello apis [with-lock], options [api], extensions cancel, throw, sigterm",
          h.get("apis") == ["with-lock"] and h.get("options") == ["api"] and
          set(h.get("extensions", [])) == {"cancel", "throw", "sigterm"}, str(h))
    key = "lc:t:ex-throw"
    x = a.acquire(key, wait=500)
    t = a.req({"type": "release", "lease": x["lease"], "throw": "boom"})
    check("example: throw: released, raised, the key gone", t["type"] == "released" and t.get("raised") is True
          and r.cmd("EXISTS", key) == 0, str(t))
    x = a.acquire(key, ttl=300, wait=500)
    time.sleep(0.6)
    t = a.req({"type": "release", "lease": x["lease"], "throw": "late"})
    check("example: throw after the lease expired: not_owner, raised false", t["type"] == "not_owner" and
          t.get("raised") is False, str(t))
    bad = example_driver("example-bad-api")
    e = bad.hello_init(91, [r.addr], extra={"api": "nope"})
    check("example: an unknown api is an init error naming it", e["type"] == "error" and "nope" in e.get("error", ""), str(e))
    bad.shutdown()
    x = a.acquire(key, ttl=3000, wait=500)
    t0 = time.time()
    os.kill(a.proc.pid, signal.SIGTERM)
    rc = a.proc.wait(4)
    check("example: sigterm: exits (143) at once, onShutdown logged, the key kept", rc == 143 and time.time() - t0 < 2 and
          r.cmd("PTTL", key) > 0 and "onShutdown() returned" in a.stderr(), "rc %s %s" % (rc, a.stderr()[-200:]))


def unreachable():
    """An init whose server cannot be reached answers error with unavailable: the machine's
    failure, which lockchaos tells from a refused option (an error without it)."""
    port = free_port()
    for label, make in (("redisson", lambda l: java_driver("redisson", l)), ("example", example_driver)):
        d = make(label + "-unreachable")
        r = d.hello_init(1, ["127.0.0.1:%d" % port])
        check(label + ": an init of a closed port is an error with unavailable",
              r.get("type") == "error" and r.get("unavailable") is True, r)
    d = java_driver("redisson", "redisson-api")
    r = d.hello_init(1, ["127.0.0.1:%d" % port], extra={"api": "no-such"})
    check("redisson: a refused option is an error without unavailable",
          r.get("type") == "error" and "unavailable" not in r, r)


def main():
    r = Redis()
    rs = [Redis() for _ in range(3)]  # independent masters
    try:
        for name, fn in (("redisson", lambda: basic(lambda l: java_driver("redisson-lease", l), r, "redisson")),
                         ("reentrant", lambda: reentrant_and_faults(r)),
                         ("reset", lambda: reset(r)),
                         ("api modes redisson", lambda: api_modes("redisson", [r])),
                         ("api modes redisson-lease", lambda: api_modes("redisson-lease", [r])),
                         ("api modes redisson-redlock", lambda: api_modes("redisson-redlock", rs, "independent",
                                                                           {"master_timeout_ms": "25", "warmup": "true"})),
                         ("cancel", lambda: cancel(lambda l: java_driver("redisson", l), "redisson", hold_rlock,
                                                   extra={"api": "try-lock"})),
                         ("interrupts", lambda: lock_idioms_interrupted(r)),
                         ("redlock spin", redlock_interrupted_spin),
                         ("throw", lambda: throw(r, rs)),
                         ("sigterm", lambda: sigterm(rs)),
                         ("watchdog", lambda: watchdog(r)),
                         ("faketime", lambda: faketime(r)),
                         ("redlock", redlock),
                         ("sentinel and cluster", sentinel_and_cluster),
                         ("example", lambda: basic(example_driver, r, "example")),
                         ("example cancel", lambda: cancel(example_driver, "example", hold_set, stops_io=False)),
                         ("example scoped", lambda: example_scoped(r)),
                         ("unreachable", unreachable)):
            if time.monotonic() > DEADLINE:
                check(name + ": run (out of time)", False)
                continue
            try:
                fn()
            except Exception as e:  # a test that throws fails, and the others still run
                check(name + ": ran without an exception", False, repr(e))
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
