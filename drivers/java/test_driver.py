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
DEADLINE = time.monotonic() + 85  # the whole file stays under 90 s

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


def cancel(make, kind, hold, stops_io=True):
    """The cancel extension: a waiting acquire interrupted, a queued one started interrupted, a release
    cancelled in flight, a cancel of an answered or unknown request; the next request runs normally.
    hold(r, key) takes key at the server as another client of the lock would. stops_io: the interrupt
    ends a call waiting on its server (Redisson's futures); Jedis' socket read does not heed it, and
    its release ends at its read timeout (then it threw with the interrupt delivered: cancelled)."""
    r = Redis()  # its own server: the release test stops it
    d = make("%s-cancel" % kind)
    d.hello_init(30, [r.addr], cmd_timeout=1000)
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
    # A queued acquire, cancelled before it starts (behind a waiting one), starts cancelled.
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
    check("%s: cancel of a queued acquire: delivered" % kind, ack2.get("delivered") is True and
          ack1.get("delivered") is True and before(c2, a2) and before(c1, a1), "%s %s" % (ack2, ack1))
    check("%s: the waiting one and the queued one answer cancelled" % kind, x1["type"] == "cancelled" and
          x2["type"] == "cancelled" and ms < 2500, "%s %s, %.0f ms" % (x1, x2, ms))
    note("%s: a queued acquire cancelled before it started: %s after %.0f ms of its call: %s", kind, x2["type"],
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
    c.hello_init(9, addrs, topology="independent", extra={"master_timeout_ms": "25", "warmup": "true", "retry": "driver"})
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


def main():
    r = Redis()
    try:
        for name, fn in (("redisson", lambda: basic(lambda l: java_driver("redisson-lease", l), r, "redisson")),
                         ("reentrant", lambda: reentrant_and_faults(r)),
                         ("cancel", lambda: cancel(lambda l: java_driver("redisson", l), "redisson", hold_rlock)),
                         ("watchdog", lambda: watchdog(r)),
                         ("faketime", lambda: faketime(r)),
                         ("redlock", redlock),
                         ("sentinel and cluster", sentinel_and_cluster),
                         ("example", lambda: basic(example_driver, r, "example")),
                         ("example cancel", lambda: cancel(example_driver, "example", hold_set, stops_io=False))):
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
