"""Reproducer for docs/findings/driver-locks-no-validity.md, without lockchaos.

redis-py's ``redis.lock.Lock`` and ``redis.asyncio.lock.Lock`` (and pottery's ``Redlock`` and
python-redis-lock's ``Lock``, the page's optional parts) give the holder no validity time and no
loss signal: after the acquire, the holder learns nothing about its lock until the release. A
holder paused past the lock's TTL (a GC pause, a stop-the-world, a blocking call in the event
loop) resumes and acts as the holder while another client holds the lock.

Each test drives the page's interleaving with a 200 ms TTL (the one lockchaos sets): client A
takes the lock (``with r.lock("k", timeout=0.2)``; the asyncio test awaits ``acquire()`` and
``release()``, what ``async with`` calls), reads a counter, is paused 600 ms (3x the TTL,
the page's second pause), then writes counter+1 and releases; client B, on its own connection and
thread, waits for the same lock with the library's own blocking acquire and, once it has it, does
the same read-then-write. The property asserted is the one a holder needs: B does not get the
lock before A released it, and no update is lost (counter 2). python-redis-lock's expire is whole
seconds, so its test takes expire=1 and a 1.5 s pause. A failure that shows the finding starts
with "REPRODUCED: "; any other failure is a setup problem.

Each test starts its own redis-server (REDIS_SERVER, default /usr/bin/redis-server) on 127.0.0.1
and stops it by its pid.
"""

import asyncio
import os
import socket
import subprocess
import threading
import time

import pytest
import redis
from redis.exceptions import LockError

# Built from two halves so that no source line pytest prints on a setup error carries the tag.
TAG = "REPRO" + "DUCED: "

REDIS_SERVER = os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")
TTL = 0.2  # seconds: the lock's timeout, as lockchaos's scenario sets it
PAUSE = 0.6  # seconds: the holder's pause between acquire and write, 3x the TTL
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
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=BOUND, socket_connect_timeout=BOUND)


def _in_thread(fn):
    """Runs fn(box) in a daemon thread; box gets 'error' if fn raised."""
    box = {}

    def run():
        try:
            fn(box)
        except BaseException as e:  # reported by the test, not lost in the thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


def _check(what, pause, a, b, counter):
    """The holder's property: B gets the lock only after A released it, and no update is lost."""
    if "error" in b:
        pytest.fail(f"setup: client B raised {b['error']!r}", pytrace=False)
    if "wrote" not in b:
        pytest.fail(f"setup: client B did not get the lock within {BOUND:.0f} s", pytrace=False)
    overlap = b["acquired"] < a["released"]
    assert not overlap and counter == 2, (
        f"{TAG}{what}: client B acquired k at {b['acquired']:.3f} s while client A, paused "
        f"{pause * 1000:.0f} ms right after its acquire, still went on as the holder and at "
        f"{a['wrote']:.3f} s wrote over B's update (counter {counter}, want 2); A learned nothing "
        f"before its write, {a['release']}")


def _release_outcome(error):
    if error is None:
        return "and its release returned normally"
    text = str(error)
    said = f": {text}" if len(text) <= 80 else ""  # pottery's names every master's connection
    return f"and only its release told it ({type(error).__name__}{said})"


def _run_sync(port, lock_for, what, pause):
    """Client A: with lock_for(ra): read, pause, write. Client B (a thread): with lock_for(rb): read, write."""
    ra, rb, observer = _client(port), _client(port), _client(port)
    observer.set("counter", 0)
    a_holds = threading.Event()
    start = time.monotonic()

    def client_b(box):
        if not a_holds.wait(BOUND):
            return
        with lock_for(rb):  # the library's blocking acquire, bounded where it has a bound
            box["acquired"] = time.monotonic() - start
            value = int(rb.get("counter"))
            rb.set("counter", value + 1)
            box["wrote"] = time.monotonic() - start

    thread, b = _in_thread(client_b)

    a = {}
    error = None
    try:
        with lock_for(ra):
            a_holds.set()
            value = int(ra.get("counter"))
            time.sleep(pause)  # the pause: a GC pause, a stop-the-world, a slow call
            ra.set("counter", value + 1)
            a["wrote"] = time.monotonic() - start
    except Exception as e:  # the release in __exit__ raised (or, before the write, the acquire)
        error = e
        if "wrote" not in a:
            pytest.fail(f"setup: client A could not take the free lock k: {e!r}", pytrace=False)
    a["released"] = time.monotonic() - start
    a["release"] = _release_outcome(error)

    thread.join(BOUND)
    _check(what, pause, a, b, int(observer.get("counter")))


# ---------------------------------------------------------------- redis.lock.Lock (sync)


def test_redis_py_lock_holder_paused_past_ttl(redis_port):
    _run_sync(redis_port,
              lambda r: r.lock("k", timeout=TTL, blocking_timeout=BOUND),  # default sleep 0.1 s between tries
              f"redis-py {redis.__version__} redis.lock.Lock (timeout={TTL} s)", PAUSE)


# ---------------------------------------------------------------- redis.asyncio.lock.Lock


def test_redis_py_asyncio_lock_holder_paused_past_ttl(redis_port):
    aioredis = pytest.importorskip("redis.asyncio", reason="this redis-py has no redis.asyncio (added in 4.2.0)")
    import redis.asyncio.lock as aiolock
    observer = _client(redis_port)
    observer.set("counter", 0)
    a_holds = threading.Event()
    start = time.monotonic()

    def aclient():
        return aioredis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=BOUND, socket_connect_timeout=BOUND)

    async def aclose(r):
        close = getattr(r, "aclose", None) or r.close
        await close()

    async def client_b(box):
        r = aclient()
        try:
            lock = r.lock("k", timeout=TTL, blocking_timeout=BOUND)  # default sleep 0.1 s between tries
            if await lock.acquire():
                box["acquired"] = time.monotonic() - start
                value = int(await r.get("counter"))
                await r.set("counter", value + 1)
                box["wrote"] = time.monotonic() - start
                await lock.release()
        finally:
            await aclose(r)

    def run_b(box):  # B on its own thread and event loop: A's pause does not stop it
        if a_holds.wait(BOUND):
            asyncio.run(client_b(box))

    thread, b = _in_thread(run_b)

    async def client_a(a):
        r = aclient()
        error = None
        try:
            lock = r.lock("k", timeout=TTL, blocking_timeout=BOUND)
            if not isinstance(lock, aiolock.Lock):  # redis-py 4.2.0's asyncio Redis.lock()
                pytest.skip(f"this redis-py's redis.asyncio Redis.lock() returns {type(lock).__module__}.Lock")
            if not await lock.acquire():
                pytest.fail("setup: client A could not take the free lock k", pytrace=False)
            a_holds.set()
            value = int(await r.get("counter"))
            time.sleep(PAUSE)  # the pause freezes A's whole event loop, as a GC pause would
            await r.set("counter", value + 1)
            a["wrote"] = time.monotonic() - start
            try:
                await lock.release()
            except LockError as e:  # LockNotOwnedError
                error = e
        finally:
            await aclose(r)
        a["released"] = time.monotonic() - start
        a["release"] = _release_outcome(error)

    a = {}
    asyncio.run(client_a(a))
    thread.join(BOUND)
    _check(f"redis-py {redis.__version__} redis.asyncio.lock.Lock (timeout={TTL} s)", PAUSE, a, b,
           int(observer.get("counter")))


# ---------------------------------------------------------------- the page's other Python locks (optional parts)


def test_pottery_redlock_holder_paused_past_ttl(redis_port):
    pottery = pytest.importorskip("pottery", reason="pottery is not in this venv (drivers-python.sh installed this redis-py alone)")
    _run_sync(redis_port,
              lambda r: pottery.Redlock(key="k", masters={r}, auto_release_time=TTL,
                                        context_manager_timeout=BOUND),
              f"pottery {_version('pottery')} Redlock (one master, auto_release_time={TTL} s)", PAUSE)


def test_python_redis_lock_holder_paused_past_ttl(redis_port):
    # Its expire is whole seconds (docs/findings/python-redis-lock-whole-second-ttl.md): 1 s is the
    # nearest to the 200 ms TTL, so the pause that outlasts it is 1.5 s (1.5x, the page's first pause).
    redis_lock = pytest.importorskip("redis_lock", reason="python-redis-lock is not in this venv (drivers-python.sh installed this redis-py alone)")
    _run_sync(redis_port,
              lambda r: redis_lock.Lock(r, "k", expire=1),
              f"python-redis-lock {_version('python-redis-lock')} Lock (expire=1 s)", 1.5)
