"""The Python driver locks against a real redis-server, over the protocol."""

import os
import queue
import re
import signal
import time

import pytest

from conftest import DRIVER, HERE, ROOT, resp

EXAMPLE = os.path.join(ROOT, "examples", "python-driver")


def pinned(dist):
    """The version the tests run: the pin, or LOCKCHAOS_TEST_VERSIONS's."""
    for v in os.environ.get("LOCKCHAOS_TEST_VERSIONS", "").split():
        if v.split("==")[0] == dist:
            return v.split("==")[1]
    with open(os.path.join(HERE, "requirements.txt")) as f:
        m = re.search(rf"^{re.escape(dist)}==(\S+)", f.read(), re.M)
    return m.group(1)


# name: (library, capabilities, extra options for a lock that must expire, its ttl_ms)
LOCKS = {
    "redis-py": ("redis", [], {}, 300),
    "redis-py-asyncio": ("redis", [], {}, 300),
    # whole seconds; without auto_renewal so that it expires
    "python-redis-lock": ("python-redis-lock", ["renews"], {"auto_renewal": "false"}, 1000),
    "pottery-redlock": ("pottery", ["multi-node"], {}, 300),
}
ALL = sorted(LOCKS)
# The worked example (examples/python-driver): a user's own lock, run by the same tests.
WITH_EXAMPLE = ALL + ["my-lock"]
LOCKS["my-lock"] = ("my-lock", [], {}, 300)


def argv_of(driver_python, lock):
    if lock == "my-lock":
        return [driver_python, os.path.join(EXAMPLE, "my_lock_driver.py")]
    return [driver_python, DRIVER, lock]


@pytest.fixture
def start(driver_python, drivers, server):
    """start(lock, name..., **init) -> a driver per name, past hello and init on the test's server
    (the processes start together: each takes a moment to import its library)."""

    def go(lock, *names, **kw):
        ds = [drivers(argv_of(driver_python, lock)) for _ in names]
        for d, name in zip(ds, names):
            h = d.hello()
            assert h["type"] == "hello_ok", h
            r = d.init(server.addr, name, **kw)
            assert r["type"] == "init_ok", r
        return ds[0] if len(ds) == 1 else ds

    return go


def key_of(server, key):
    return resp(server.port, "GET", key)


def holding(start, lock, key, **kw):
    """Two drivers, c1 and c2; c1 holds key (5 s). Returns them and c1's reply."""
    a, b = start(lock, "lc-t-c1", "lc-t-c2", **kw)
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    assert r["t0"] <= r["t1"]
    return a, b, r


@pytest.mark.parametrize("lock", ALL)
def test_hello(driver_python, drivers, lock):
    d = drivers([driver_python, DRIVER, lock])
    h = d.hello()
    library, caps, _, _ = LOCKS[lock]
    assert h["type"] == "hello_ok" and h["in_reply_to"] == 1 and h["protocol"] == 1
    assert h["name"] == lock and h["library"] == library and h["language"] == "python"
    assert h["version"] == pinned(library)
    assert h["capabilities"] == caps
    assert "version" in h["options"]
    assert set(h["reports"]) <= {"deadline", "lost", "fence", "renewals"}


@pytest.mark.parametrize("lock", WITH_EXAMPLE)
def test_contention_and_release(start, server, lock):
    key = "lc:t:k0"
    a, b, r = holding(start, lock, key)
    assert key_of(server, key) == r["token"], "the reply's token is the value in Redis"
    r2 = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r2["type"] == "not_acquired", r2
    assert key_of(server, key) == r["token"]
    rel = a.call({"type": "release", "lease": r["lease"]})
    assert rel["type"] == "released", rel
    assert key_of(server, key) is None
    r3 = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r3["type"] == "acquired", r3
    assert key_of(server, key) == r3["token"] != r["token"]
    # Every connection but the one asking is a driver's, named as told.
    names = re.findall(r"\bname=(\S*)", resp(server.port, "CLIENT", "LIST"))
    assert sorted(names) == ["", "lc-t-c1", "lc-t-c2"], names


@pytest.mark.parametrize("lock", WITH_EXAMPLE)
def test_not_owner_after_expiry(start, server, lock):
    _, _, extra, ttl = LOCKS[lock]
    a, b = start(lock, "lc-t-c1", "lc-t-c2", extra=extra)
    key = "lc:t:k1"
    r = a.call({"type": "acquire", "key": key, "ttl_ms": ttl, "wait_ms": 0})
    assert r["type"] == "acquired", r
    time.sleep(ttl / 1000 + 0.25)
    assert key_of(server, key) is None, "the key expired"
    rb = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert rb["type"] == "acquired", rb
    ext = a.call({"type": "extend", "lease": r["lease"], "ttl_ms": 5000})
    if lock == "my-lock":  # it has no extend
        assert ext["type"] == "error" and ext["error"].startswith("unsupported"), ext
    else:
        assert ext["type"] == "not_owner", ext
    rel = a.call({"type": "release", "lease": r["lease"]})
    assert rel["type"] == "not_owner", rel
    assert key_of(server, key) == rb["token"], "the late release left the new holder's key alone"


@pytest.mark.parametrize("lock", WITH_EXAMPLE)
def test_indeterminate_when_server_stopped(start, server, lock):
    a = start(lock, "lc-t-c1", command_timeout_ms=200)
    held = a.call({"type": "acquire", "key": "lc:t:k2", "ttl_ms": 5000, "wait_ms": 0})
    assert held["type"] == "acquired", held
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        r = a.call({"type": "acquire", "key": "lc:t:k3", "ttl_ms": 5000, "wait_ms": 0}, timeout=8)
        rel = a.call({"type": "release", "lease": held["lease"]}, timeout=8)
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    for x in (r, rel):
        assert x["type"] == "indeterminate", x
        took = (x["t1"] - x["t0"]) / 1e9
        assert 0.15 <= took < 3, took
    # The release again. The first never left the client (the acquire's timeout dropped the
    # connection, and the new one's handshake, which names it, timed out), so the key is still
    # there. No lock may call that a refusal by the server: redis-py's sync Lock forgot its token
    # at the first try and says so without asking (an error); the others (the example on the kit,
    # which keeps a lease until a definite answer, among them) ask again.
    again = a.call({"type": "release", "lease": held["lease"]})
    if lock == "redis-py":
        assert again["type"] == "error", again
    else:
        assert again["type"] == "released", again


@pytest.mark.parametrize("lock", WITH_EXAMPLE)
def test_ping_answered_during_blocking_acquire(start, server, lock):
    key = "lc:t:k4"
    a, b, r = holding(start, lock, key)
    acq = b.send({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 3000})
    time.sleep(0.2)  # b is inside the library's wait
    sent = time.monotonic()
    pong = b.wait(b.send({"type": "ping"}), timeout=2)
    # Answered while the acquire waits (it cannot end before the release below); the bound only
    # keeps a loaded machine's scheduling out of the verdict.
    assert pong["type"] == "pong" and time.monotonic() - sent < 1.5
    clk = b.wait(b.send({"type": "clock"}), timeout=2)
    assert clk["type"] == "clock_ok" and clk["mono_ns"] > 0 and abs(clk["wall_ns"] / 1e9 - time.time()) < 5
    rel = a.call({"type": "release", "lease": r["lease"]})
    assert rel["type"] == "released", rel
    got = b.wait(acq, timeout=5)
    assert got["type"] == "acquired", got
    # One host, one CLOCK_MONOTONIC: the drivers' times compare.
    assert got["t0"] < rel["t0"] < got["t1"], "the acquire began before the release and ended after it"


def test_python_redis_lock_renews_and_reports(start, server):
    a, b = start("python-redis-lock", "lc-t-c1", "lc-t-c2")
    key = "lc:t:k5"
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    time.sleep(2.3)  # past the 2 s expiry: renewed every 4/3 s
    assert key_of(server, key) == r["token"]
    assert b.call({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 0})["type"] == "not_acquired"
    rel = a.call({"type": "release", "lease": r["lease"]})
    assert rel["type"] == "released"
    ren = [e for e in a.events if e["type"] == "renewal"]
    assert len(ren) >= 1 and all(e["lease"] == r["lease"] and e["outcome"] == "ok" and e["t0"] <= e["t1"] for e in ren), ren


@pytest.mark.parametrize("lock", ["redis-py", "pottery-redlock"])
def test_refuses_unknown_option_and_other_version(driver_python, drivers, server, lock):
    d = drivers([driver_python, DRIVER, lock])
    d.hello()
    r = d.init(server.addr, "lc-t-c1", extra={"no_such_option": "1"})
    assert r["type"] == "error" and "no_such_option" in r["error"], r
    r = d.init(server.addr, "lc-t-c1", extra={"version": "0.0.1"})
    assert r["type"] == "error" and "0.0.1" in r["error"], r


def test_pottery_independent_masters(driver_python, drivers):
    from conftest import RedisServer

    servers = [RedisServer() for _ in range(3)]
    try:
        eps = [{"addr": s.addr} for s in servers]
        a, b = (drivers([driver_python, DRIVER, "pottery-redlock"]) for _ in range(2))
        for d, n in ((a, "lc-t-c1"), (b, "lc-t-c2")):
            d.hello()
            assert d.init(None, n, topology="independent", endpoints=eps)["type"] == "init_ok"
        key = "lc:t:k6"
        os.kill(servers[2].proc.pid, signal.SIGSTOP)  # a minority down: still a majority
        r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
        assert r["type"] == "acquired", r
        assert [resp(s.port, "GET", key) for s in servers[:2]] == [r["token"]] * 2
        os.kill(servers[1].proc.pid, signal.SIGSTOP)  # now a majority down: b cannot know
        rb = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
        assert rb["type"] == "indeterminate", rb
    finally:
        for s in servers:
            s.stop()


@pytest.mark.parametrize("lock", WITH_EXAMPLE)
def test_lock_file_starts_the_driver(driver_python, drivers, lock):
    """Each lock file's command, run from its dir with its env, speaks the protocol."""
    yaml = pytest.importorskip("yaml")
    where = EXAMPLE if lock == "my-lock" else HERE
    with open(os.path.join(where, f"{lock}.yaml")) as f:
        lf = yaml.safe_load(f)
    library, caps, _, _ = LOCKS[lock]
    assert lf["name"] == lock and lf["library"] == library and lf["capabilities"] == caps
    # The lock-file format refuses fields lockchaos does not know: another version reaches
    # the driver as LOCKCHAOS_LOCK_VERSION, which run.sh installs and runs (test_install).
    assert set(lf) <= {"name", "description", "command", "dir", "env", "options", "library", "language", "capabilities", "apis",
                       "extensions"}
    d = drivers(lf["command"], env=lf["env"], cwd=os.path.join(where, lf["dir"]))
    h = d.hello()
    assert h["name"] == lock and h["library"] == library and h["capabilities"] == caps
    assert h.get("extensions", []) == lf.get("extensions", []), "the lock file says the hello's extensions"
    if lock != "my-lock":
        assert h["version"] == pinned(library)
    assert set(lf["options"]) <= set(h["options"])


def test_python_redis_lock_pause_outlasts_expire(start, server):
    """A pause-client (SIGSTOP of the driver's process group) longer than expire stops the
    renewal thread with everything else: the key expires, another client takes it, and the
    renewal after the pause is refused and reported."""
    a, b = start("python-redis-lock", "lc-t-c1", "lc-t-c2")
    key = "lc:t:k7"
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 1000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    os.killpg(a.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(1.3)
        assert key_of(server, key) is None, "no renewal during the pause"
        rb = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
        assert rb["type"] == "acquired", rb
    finally:
        os.killpg(a.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 3
    while not any(e["type"] == "renewal" and e["outcome"] == "not_owner" for e in a.events):
        assert time.monotonic() < deadline, f"no refused renewal pushed: {a.events}"
        a.call({"type": "ping"})  # collects pushed events
        time.sleep(0.05)
    assert a.call({"type": "release", "lease": r["lease"]})["type"] == "not_owner"
    assert key_of(server, key) == rb["token"]


@pytest.mark.parametrize("lock", ALL)
def test_cancel_extension_only_where_a_call_can_be_cancelled(driver_python, drivers, lock):
    h = drivers([driver_python, DRIVER, lock]).hello()
    # asyncio cancels a task in flight; a sync call in a thread cannot be stopped from outside.
    # Every lock on the kit raises in its idiom (throw) and unwinds its holds on SIGTERM.
    want = (["cancel"] if lock == "redis-py-asyncio" else []) + ["throw", "sigterm", "reset"]
    assert h.get("extensions", []) == want, h


# Each lock's idioms (api), the default first: the README's first.
APIS = {"redis-py": ["with", "acquire"], "redis-py-asyncio": ["async-with", "acquire"],
        "python-redis-lock": ["acquire", "with"], "pottery-redlock": ["acquire", "with"]}
LOCK_APIS = [(lock, api) for lock in ALL for api in APIS[lock]]


@pytest.mark.parametrize("lock", ALL)
def test_hello_lists_the_idioms(driver_python, drivers, lock):
    h = drivers([driver_python, DRIVER, lock]).hello()
    assert h["apis"] == APIS[lock] and "api" in h["options"], h


@pytest.mark.parametrize("lock,api", LOCK_APIS)
def test_api_modes_hold_and_release(start, server, lock, api):
    key = "lc:t:api"
    a, b = start(lock, "lc-t-c1", "lc-t-c2", extra={"api": api})
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    assert key_of(server, key) == r["token"]
    r2 = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 300})
    assert r2["type"] == "not_acquired", r2
    rel = a.call({"type": "release", "lease": r["lease"]})
    assert rel["type"] == "released" and "raised" not in rel, rel
    # An idiom whose wait has no bound (python-redis-lock's `with`) was
    # given up at wait_ms and goes on in its thread: it may take the key
    # now, and is left at once, as an application that gave up drops it.
    free_by(server, key, 2.0)
    r3 = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 300})
    assert r3["type"] == "acquired", r3
    # Thrown in the critical section: the idiom's exception path releases, and the error goes on.
    th = b.call({"type": "release", "lease": r3["lease"], "throw": "lockchaos: boom"})
    assert th["type"] == "released" and th["raised"] is True, th
    assert key_of(server, key) is None


def free_by(server, key, within):
    deadline = time.monotonic() + within
    while key_of(server, key) is not None:
        assert time.monotonic() < deadline, f"{key} still held after {within} s"
        time.sleep(0.01)


def test_unknown_api_refused(start, server, driver_python, drivers):
    d = drivers([driver_python, DRIVER, "redis-py"])
    d.hello()
    r = d.init(server.addr, "lc-t-c1", extra={"api": "lock-forever"})
    assert r["type"] == "error" and "api=lock-forever" in r["error"] and "with" in r["error"], r


@pytest.mark.parametrize("lock,api", LOCK_APIS)
def test_sigterm_unwinds_the_hold(start, server, lock, api):
    """SIGTERM while holding: SystemExit unwinds the hold (its scope's exit,
    or the application's finally releases), then the interpreter exits 0."""
    key = "lc:t:term"
    a = start(lock, "lc-t-c1", extra={"api": api})
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    began = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    assert a.proc.wait(timeout=5) == 0
    assert time.monotonic() - began < 2
    assert key_of(server, key) is None, "the hold was released on the way out"


def test_asyncio_cancel_ends_the_call_in_flight(start, server):
    key = "lc:t:k9"
    a, b, r = holding(start, "redis-py-asyncio", key)
    # In flight: the library's blocking wait for a key a holds.
    acq = b.send({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 3000})
    time.sleep(0.2)
    ok = b.wait(b.send({"type": "cancel", "of": acq}), timeout=2)
    assert ok["type"] == "cancel_ok" and ok["delivered"] is True, ok
    got = b.wait(acq, timeout=2)  # cancel_ok came first (wait checks the order)
    assert got["type"] == "cancelled" and "CancelledError" in got["error"], got
    assert (got["t1"] - got["t0"]) / 1e9 < 1.5, "ended by the cancel, not by its 3 s wait"
    # Answered already: nothing to cancel.
    late = b.call({"type": "cancel", "of": acq})
    assert late["type"] == "cancel_ok" and late["delivered"] is False, late
    # Sent right behind its request: queued or just started, it starts cancelled.
    acq2 = b.send({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 3000})
    ok2 = b.wait(b.send({"type": "cancel", "of": acq2}), timeout=2)
    assert ok2["delivered"] is True, ok2
    assert b.wait(acq2, timeout=2)["type"] == "cancelled"
    # The next call runs normally, on a fresh task; the held key was never b's.
    r3 = b.call({"type": "acquire", "key": "lc:t:k10", "ttl_ms": 5000, "wait_ms": 0})
    assert r3["type"] == "acquired", r3
    assert key_of(server, key) == r["token"]
    # A release cancelled in flight ends its lease on the driver's side: a second one is unknown.
    rel = b.send({"type": "release", "lease": r3["lease"]})
    ok3 = b.wait(b.send({"type": "cancel", "of": rel}), timeout=2)
    out = b.wait(rel, timeout=2)
    assert (ok3["delivered"], out["type"]) in ((True, "cancelled"), (False, "released"), (True, "released")), (ok3, out)
    again = b.call({"type": "release", "lease": r3["lease"]})
    assert again["type"] == "error", again


def test_asyncio_cancel_as_the_acquire_is_sent_is_answered(start, server):
    """An acquire of a free key cancelled as it is sent is answered: cancelled, or acquired when
    the library lost the cancel and its task went on into its `async with` (Python 3.11's
    asyncio.wait_for drops a cancel that lands as its future completes). Before one fix about
    one in ten such acquires was never answered (a CI rehearsal: unanswered for 5.6 s); before
    the next, an acquire answered acquired whose scope then saw the cancel and released (CI: its
    release raised the exit's CancelledError). The cancels land 0-780 µs after the acquire."""
    b = start("redis-py-asyncio", "lc-t-c8")
    for i in range(150):
        key = "lc:t:sent%d" % (i % 3)
        acq = b.send({"type": "acquire", "key": key, "ttl_ms": 2000, "wait_ms": 400})
        time.sleep((i % 40) * 20e-6)
        c = b.send({"type": "cancel", "of": acq})
        replies = {}
        deadline = time.monotonic() + 3
        while len(replies) < 2 and time.monotonic() < deadline:
            try:
                m = b.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            assert m is not None, "driver exited: " + "".join(b.errlines)[-1500:]
            if "in_reply_to" in m:
                replies[m["in_reply_to"]] = m
        assert set(replies) == {acq, c}, (i, replies)
        got = replies[acq]
        assert got["type"] in ("cancelled", "acquired", "not_acquired"), got
        if got["type"] == "acquired":
            assert key_of(server, key) == got["token"], (i, got)  # held, as answered
            rel = b.call({"type": "release", "lease": got["lease"]})
            assert rel["type"] == "released", (i, rel)


@pytest.mark.parametrize("lock", ALL)
def test_reset_serves_another_run(start, server, lock):
    # The reset extension (warm drivers): refused while a lease is held; after it, the run's
    # connections are gone and a fresh init (another name) locks as a new process would.
    key = "lc:t:reset"
    a = start(lock, "lc-t-run1")
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    refused = a.call({"type": "reset"})
    assert refused["type"] == "error" and "leases held" in refused["error"], refused
    assert a.call({"type": "release", "lease": r["lease"]})["type"] == "released"
    assert a.call({"type": "reset"})["type"] == "reset_ok"
    names = re.findall(r"\bname=(\S*)", resp(server.port, "CLIENT", "LIST"))
    assert "lc-t-run1" not in names, names
    assert a.init(server.addr, "lc-t-run2")["type"] == "init_ok"
    r2 = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r2["type"] == "acquired" and key_of(server, key) == r2["token"], r2
    names = re.findall(r"\bname=(\S*)", resp(server.port, "CLIENT", "LIST"))
    assert "lc-t-run2" in names and "lc-t-run1" not in names, names
    rel = a.call({"type": "release", "lease": r2["lease"]})
    assert rel["type"] == "released", rel
