"""Reproducer for docs/findings/python-redis-lock-whole-second-ttl.md, without lockchaos.

python-redis-lock's ``Lock(redis_client, name, expire=...)`` documents ``expire`` as "the lock
expiry time in seconds", but ``Lock.__init__`` truncates it with ``int()`` and ``acquire`` sets the
key with ``SET NX EX`` (whole seconds):

* test_dead_holders_key_is_freed_within_the_ttl: the page's interleaving. A lease of 200 ms
  (the TTL lockchaos's scenario asks for): ``expire=0.2`` becomes 0 and the acquire fails, so the
  holder takes the nearest lease the library gives (``expire=1``, what lockchaos's driver does);
  it dies holding the lock and a second client waits a whole second, five times the TTL.
* test_fractional_expire_keeps_the_lease_asked_for: ``expire=1.5`` gives a key that lives 1 s; a
  holder still inside the 1.5 s it asked for is overtaken by a second client, and a counter
  read-then-written under the lock loses an update.

Each test starts its own redis-server (REDIS_SERVER, default /usr/bin/redis-server) on
127.0.0.1 and stops it by its pid. A failure that shows the finding starts with "REPRODUCED: ";
any other failure is a setup problem.
"""

import math
import os
import socket
import subprocess
import threading
import time

import pytest
import redis
import redis_lock

# Built from two halves so that no source line pytest prints on a setup error carries the tag.
TAG = "REPRO" + "DUCED: "

REDIS_SERVER = os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")
TTL = 0.2  # seconds: the lease the page's scenario asks for
EPSILON = 0.1  # seconds: lockchaos's allowance on top of the TTL for a freed key
BOUND = 5.0  # seconds: every wait in these tests ends by then


# ---------------------------------------------------------------- redis-server, started and stopped here


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pings(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.settimeout(0.5)
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _start_redis(tmp_path):
    """Starts redis-server on a free loopback port; returns (process, port)."""
    last = ""
    for _ in range(3):  # a port taken between the probe and the bind: try another
        port = _free_port()
        log = tmp_path / f"redis-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            if _pings(port):
                return proc, port
            time.sleep(0.02)
        _stop(proc)
        last = log.read_text(errors="replace")[-2000:]
    pytest.fail(f"setup: {REDIS_SERVER} did not answer PING within 10 s; its log:\n{last}", pytrace=False)


@pytest.fixture
def redis_port(tmp_path):
    proc, port = _start_redis(tmp_path)
    try:
        yield port
    finally:
        _stop(proc)


def _client(port):
    return redis.StrictRedis(host="127.0.0.1", port=port, socket_timeout=BOUND, socket_connect_timeout=BOUND)


def _in_thread(fn):
    """Runs fn in a daemon thread; returns (thread, box) where box gets 'error' if fn raised."""
    box = {}

    def run():
        try:
            fn(box)
        except BaseException as e:  # reported by the test, not lost in the thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


# ---------------------------------------------------------------- the page's interleaving: a dead holder, TTL 200 ms


def test_dead_holders_key_is_freed_within_the_ttl(redis_port):
    """A holder with a 200 ms lease dies holding the lock; another client must get it within TTL + 100 ms."""
    a, b, observer = _client(redis_port), _client(redis_port), _client(redis_port)

    refused = None
    expire = TTL
    lock_a = redis_lock.Lock(a, "k", expire=expire)
    try:
        got = lock_a.acquire(blocking=False)
    except redis.ResponseError as e:
        # 4.0.1: expire=0.2 became 0 and SET ... EX 0 is refused. Take the nearest lease the library
        # gives, as lockchaos's driver does: max(1, ceil(TTL)) whole seconds.
        refused = str(e)
        expire = max(1, math.ceil(TTL))
        lock_a = redis_lock.Lock(a, "k", expire=expire)
        got = lock_a.acquire(blocking=False)
    if not got:
        pytest.fail("setup: client A could not take the free lock k", pytrace=False)
    pttl = observer.pttl("lock:k")

    # Client A dies holding the lock: it never releases, its connection goes (the library's
    # default has no renewal thread to stop).
    a.connection_pool.disconnect()
    del lock_a
    died = time.monotonic()

    def client_b(box):
        lock_b = redis_lock.Lock(b, "k", expire=expire)
        lock_b.acquire()  # the library's blocking acquire, as an application waits for a lock
        box["acquired"] = time.monotonic()
        lock_b.release()

    thread, box = _in_thread(client_b)
    thread.join(BOUND)
    if "error" in box:
        pytest.fail(f"setup: client B's acquire raised {box['error']!r}", pytrace=False)
    waited = box["acquired"] - died if "acquired" in box else None

    allowed = TTL + EPSILON
    if refused is not None:
        asked = (f"Lock(expire={TTL}).acquire() raised ResponseError ({refused}), so client A took "
                 f"the nearest lease the library gives, expire={expire} (key PTTL {pttl} ms); ")
    else:
        asked = f"Lock(expire={TTL}) set the key with PTTL {pttl} ms; "
    if waited is None:
        happened = f"A died holding k and client B still had not acquired it {BOUND:.0f} s later"
    else:
        happened = (f"A died holding k and client B waited {waited:.3f} s for it, "
                    f"{waited / TTL:.1f}x the {TTL * 1000:.0f} ms TTL (allowed {allowed:.3f} s)")
    assert refused is None and waited is not None and waited <= allowed, TAG + asked + happened


# ---------------------------------------------------------------- a fraction cut off: the lease is shorter than asked


def test_fractional_expire_keeps_the_lease_asked_for(redis_port):
    """A holder working 1.4 s inside the 1.5 s it asked for must not be overtaken; no update lost."""
    expire, work = 1.5, 1.4
    a, b, observer = _client(redis_port), _client(redis_port), _client(redis_port)
    observer.set("counter", 0)

    lock_a = redis_lock.Lock(a, "k", expire=expire)
    start = time.monotonic()
    if not lock_a.acquire(blocking=False):
        pytest.fail("setup: client A could not take the free lock k", pytrace=False)
    pttl = observer.pttl("lock:k")

    def client_b(box):
        lock_b = redis_lock.Lock(b, "k", expire=expire)
        lock_b.acquire()  # blocks until A's key is gone
        box["acquired"] = time.monotonic() - start
        value = int(b.get("counter"))
        b.set("counter", value + 1)
        box["wrote"] = time.monotonic() - start
        lock_b.release()

    thread, box = _in_thread(client_b)

    # Client A: read the counter, work 1.4 s (inside its 1.5 s lease), write it back, release.
    value = int(a.get("counter"))
    time.sleep(work)
    a.set("counter", value + 1)
    a_wrote = time.monotonic() - start
    try:
        lock_a.release()
        a_release = "its release returned normally"
    except redis_lock.NotAcquired:
        a_release = "its release then raised NotAcquired"
    a_released = time.monotonic() - start

    thread.join(BOUND)
    if "error" in box:
        pytest.fail(f"setup: client B raised {box['error']!r}", pytrace=False)
    if "wrote" not in box:
        pytest.fail(f"setup: client B did not acquire k within {BOUND:.0f} s of A's release", pytrace=False)
    counter = int(observer.get("counter"))

    overlap = box["acquired"] < a_released
    assert not overlap and counter == 2, (
        f"{TAG}Lock(expire={expire}) set a key with PTTL {pttl} ms, so client B acquired k at "
        f"{box['acquired']:.3f} s while client A, {work * 1000:.0f} ms into the {expire} s lease it asked for, "
        f"still went on as the holder and at {a_wrote:.3f} s wrote over B's update "
        f"(counter {counter}, want 2); {a_release}")
