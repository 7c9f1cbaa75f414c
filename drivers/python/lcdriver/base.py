"""What every Python driver lock shares: options, leases, connections, outcomes."""

import importlib.metadata
import itertools
import socket
import sys
import time

now = time.monotonic_ns


def log(*a):
    print("lockchaos driver:", *a, file=sys.stderr, flush=True)


def parse_bool(v):
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {v!r}")


def split_addr(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


from .scope import ApplicationError, Shutdown, ThreadScope  # noqa: E402


def abandon(sc):
    """A scope the application gave up entering: if it enters after all, it
    is left at once (its exit releases what it won)."""
    import threading

    def leave():
        for _ in range(6000):  # a minute at most
            if sc.entered.wait(0.01) or sc.ended.is_set():
                break
        if sc.entered.is_set():
            sc.leave_with(None, bound=30)
    threading.Thread(target=leave, name="abandoned-scope", daemon=True).start()


class Unsupported(Exception):
    """A request the library has no call for."""


class Cancelled(Exception):
    """Raised by a lock whose library call ended by its cancel (the
    protocol's cancel extension: BaseLock.cancel_call)."""


class Indeterminate(Exception):
    """Raised by a lock when the library's answer hides an unknown outcome
    (e.g. a refusal counted from masters that timed out)."""


def is_indeterminate(exc):
    """A timeout or a broken connection: the outcome at the server is unknown.
    A refusal the library raises (LockNotOwnedError, ...) is mapped by each
    lock before this; a ResponseError (the server refused the command, e.g.
    READONLY or MOVED) is an error, which lockchaos also counts as unknown."""
    kinds = (Indeterminate, socket.timeout, ConnectionError, TimeoutError)
    try:  # the kit depends on nothing: redis-py's own, where it is installed
        import redis.exceptions as rx

        kinds += (rx.TimeoutError, rx.ConnectionError)
    except ImportError:
        pass
    if isinstance(exc, kinds):
        return True
    try:
        import asyncio

        if isinstance(exc, asyncio.TimeoutError):
            return True
    except ImportError:
        pass
    return False


def outcome_of(exc, t0, t1):
    """The reply for an exception the lock did not map to a refusal."""
    if isinstance(exc, Unsupported):
        return {"type": "error", "error": str(exc), "t0": t0, "t1": t1}
    kind = "indeterminate" if is_indeterminate(exc) else "error"
    return {"type": kind, "error": f"{type(exc).__name__}: {exc}", "t0": t0, "t1": t1}


class BaseLock:
    name = ""
    library = ""  # the PyPI distribution whose version hello reports
    capabilities = []
    reports = []
    # Options every lock understands; each adds its own.
    common_options = ["version", "retries"]
    own_options = []
    # The library's idioms this driver calls (docs/driver-protocol.md, "API
    # modes"), the default first: the one the library's README shows first.
    # A scoped one ("with", "async-with") holds the lock inside the library's
    # own context manager (scope_cm); any other calls acquire and release
    # (do_acquire, do_release), the release in the application's finally.
    apis = ["acquire"]
    scoped_apis = ("with", "async-with")
    # The throw, sigterm and reset extensions: every lock on the kit has
    # them (reset: the process serves another run after a fresh init).
    extensions = ["throw", "sigterm", "reset"]

    # The cancel extension: a lock whose library calls can be cancelled in
    # flight (asyncio) sets cancellable and defines cancel_call, which the
    # stdin thread calls while a request is in the worker, and raises
    # Cancelled from the call it ended. cancel_reset(pending) is called as
    # each request starts (pending: it was cancelled before it started, so
    # its call starts cancelled) and as it ends (False).
    cancellable = False

    def cancel_call(self):
        raise NotImplementedError

    def cancel_reset(self, pending):
        pass

    def __init__(self):
        self.push = None  # set by the driver: sends a pushed event
        self.leases = {}
        self.scopes = {}  # lease -> the scope it is held in (scoped idioms)
        self.next_lease = itertools.count(1)
        self.cfg = {}
        self.extra = {}
        self.api = self.apis[0]

    @property
    def options(self):
        return self.common_options + (["api"] if self.apis else []) + self.own_options

    def hello_extensions(self):
        return (["cancel"] if self.cancellable else []) + list(self.extensions)

    def version(self):
        return importlib.metadata.version(self.library)

    # init -----------------------------------------------------------------

    def init(self, msg):
        opts = msg.get("options") or {}
        extra = {k: str(v) for k, v in (opts.get("extra") or {}).items()}
        unknown = sorted(set(extra) - set(self.options))
        if unknown:
            return {"type": "error", "error": f"unknown lock option(s) {unknown} (this lock: {self.options})"}
        want = extra.get("version")
        if want and want != self.version():
            return {"type": "error", "error": f"{self.library} {want} asked for but {self.version()} is installed "
                                              f"(start the driver with LOCKCHAOS_LOCK_VERSION={want})"}
        api = extra.get("api", self.apis[0])
        if api not in self.apis:
            return {"type": "error", "error": f"api={api}: this lock calls its library in modes {self.apis} (the default first)"}
        self.api = api
        self.extra = extra
        self.cfg = opts
        self.conn_name = msg.get("conn_name")
        self.key_prefix = msg.get("key_prefix", "")
        self.topology = msg.get("topology", "single")
        self.endpoints = msg.get("endpoints") or []
        if not self.endpoints:
            return {"type": "error", "error": "init: no endpoints"}
        if self.topology not in self.topologies:
            return {"type": "error", "error": f"unsupported: topology {self.topology} (this lock: {self.topologies})"}
        self.command_timeout = (opts.get("command_timeout_ms") or 1000) / 1000.0
        self.retries = int(extra.get("retries", 0))
        t0 = now()
        try:
            self.connect()
        except Exception as e:
            # Could not reach the servers (a refused or timed-out connection):
            # the machine's failure, which lockchaos tells from a refused option.
            r = {"type": "error", "error": f"connect: {type(e).__name__}: {e}", "t0": t0, "t1": now()}
            if is_indeterminate(e):
                r["unavailable"] = True
            return r
        t1 = now()
        return {"type": "init_ok", "t0": t0, "t1": t1}

    topologies = ("single", "sentinel", "cluster", "independent")

    def connect(self):
        raise NotImplementedError

    def opt_ms(self, name, default=None):
        v = self.cfg.get(name)
        return default if v in (None, 0) else v

    # requests ---------------------------------------------------------------
    #
    # A lock defines new_lock, do_acquire, do_release, do_extend (each one
    # library call), token, and refusals: the exceptions by which the library
    # says the server refused. Times are read right around the library call.

    refusals = ()

    def new_lock(self, key, ttl_ms, lease):
        raise NotImplementedError

    def token(self, lock):
        return None

    def acquire(self, key, ttl_ms, wait_ms):
        lease = f"L{next(self.next_lease)}"
        lock = self.new_lock(key, ttl_ms, lease)
        if self.api in self.scoped_apis:
            return self.acquire_scoped(lease, lock, wait_ms)
        t0 = now()
        try:
            ok = self.do_acquire(lock, ttl_ms, wait_ms)
        except self.refusals:
            ok = False
        except Cancelled as e:  # the application gave up: no lease, no release
            return {"type": "cancelled", "error": str(e), "t0": t0, "t1": now()}
        except Exception as e:
            return outcome_of(e, t0, now())
        t1 = now()
        if not ok:
            return {"type": "not_acquired", "t0": t0, "t1": t1}
        return self.acquired(lease, lock, t0, t1)

    def acquired(self, lease, lock, t0, t1, tok=None):
        self.leases[lease] = lock
        r = {"type": "acquired", "lease": lease, "depth": 1, "t0": t0, "t1": t1}
        if tok is None:
            tok = self.token(lock)
        if tok is not None:
            r["token"] = tok.decode("utf-8", "replace") if isinstance(tok, bytes) else str(tok)
        keys = self.keys(lock)
        if keys:
            r["keys"] = list(keys)
        return r

    def keys(self, lock):
        """The Redis keys the acquire wrote when the library names its own (docs/driver-protocol.md,
        "A library that names its own keys"); None when it writes the key it was given."""
        return None

    def timed(self, call, done):
        t0 = now()
        try:
            call()
        except self.refusals:
            return {"type": "not_owner", "t0": t0, "t1": now()}
        except Cancelled as e:
            return {"type": "cancelled", "error": str(e), "t0": t0, "t1": now()}
        except Exception as e:
            return outcome_of(e, t0, now())
        t1 = now()
        return {"type": done, "t0": t0, "t1": t1}

    def release(self, lease, throw=None):
        lock = self.hold(lease)
        if lease in self.scopes:
            return self.release_scoped(lease, throw)
        # The explicit idiom: the release is the application's finally, which
        # runs whether or not its critical section raised (throw); the error
        # then goes on to the application's caller.
        r = self.timed(lambda: self.do_release(lock), "released")
        if throw is not None:
            r["raised"] = True
        # A definite answer, or a release the application gave up on (it does not send another): the lease is over.
        if r["type"] in ("released", "not_owner", "cancelled") or throw is not None:
            self.leases.pop(lease, None)
        return r

    # scoped idioms (lcdriver.scope) -----------------------------------------

    def scope_cm(self, lock, wait_ms):
        """The library's context manager for the scoped api (sync: a with,
        asyncio: an async with), its wait bounded by wait_ms where the idiom
        can be; a lock with scoped apis defines it."""
        raise Unsupported(f"unsupported: api {self.api}")

    # enter_refusals: what the context manager's entry raises when the lock
    # was not acquired (redis-py's LockError "Unable to acquire lock ...").
    enter_refusals = ()

    # scope_unbounded: the scoped idiom's entry waits without a bound of its
    # own (python-redis-lock's `with`): the driver gives up at wait_ms, as
    # an application's timeout around it does.
    scope_unbounded = False

    def scope_bound(self, wait_ms):
        """How long a scope's entry may take before the driver answers without
        it: wait_ms for an idiom with no bound of its own; else the wait, then
        two command timeouts, so that the idiom's own bound answers first
        (lockchaos's bound adds 5 s)."""
        if self.scope_unbounded:  # the wait, and one command's time (wait_ms 0: one try)
            return now() + int((wait_ms / 1000.0 + self.command_timeout) * 1e9)
        return now() + int((wait_ms / 1000.0 + 2 * self.command_timeout + 1.0) * 1e9)

    def acquire_scoped(self, lease, lock, wait_ms):
        cm = self.scope_cm(lock, wait_ms)
        t0 = now()
        try:
            sc, inside = self.enter_scope(cm, wait_ms, lambda: self.token(lock))
        except Cancelled as e:
            return {"type": "cancelled", "error": str(e), "t0": t0, "t1": now()}
        except self.refusals + self.enter_refusals:
            return {"type": "not_acquired", "t0": t0, "t1": now()}
        except Exception as e:
            return outcome_of(e, t0, now())
        t1 = now()
        if inside is None:
            # Still entering at the bound (an idiom with no bounded wait): the
            # application gave up; a scope entered later is left at once.
            abandon(sc)
            return {"type": "not_acquired", "error": "the idiom's wait outlasted wait_ms; abandoned", "t0": t0, "t1": t1}
        self.scopes[lease] = sc
        return self.acquired(lease, lock, t0, t1, getattr(sc, "token", None))

    def enter_scope(self, cm, wait_ms, token):
        """Enters cm on a thread of its own (a sync lock; redispy_asyncio has
        its own): (scope, True) once inside, (scope, None) when the bound
        passed first; raises what entering raised. token() is read inside."""
        sc = ThreadScope(cm, on_enter=token)
        deadline = self.scope_bound(wait_ms)
        inside = sc.enter(lambda: now() > deadline)
        if inside is False:
            raise sc.enter_error
        return sc, inside

    def leave_scope(self, sc, exc):
        return sc.leave_with(exc, bound=self.command_timeout * 2 + 5)

    def release_scoped(self, lease, throw):
        sc = self.scopes[lease]
        t0 = now()
        try:
            ex = self.leave_scope(sc, ApplicationError(throw) if throw is not None else None)
        except Cancelled as e:
            self.scopes.pop(lease, None)
            self.leases.pop(lease, None)
            return {"type": "cancelled", "error": str(e), "t0": t0, "t1": now()}
        t1 = now()
        self.scopes.pop(lease, None)
        if ex is None:
            return {"type": "indeterminate", "error": "the scope's exit did not end in time", "t0": t0, "t1": t1}
        err = ex.error
        if err is None or isinstance(err, self.refusals + (Cancelled,)) or throw is not None:
            self.leases.pop(lease, None)
        # else the exit's release failed (a timeout): the lease stays, and a
        # release sent again calls the library's release() itself, as an
        # application's except clause around the block would.
        if err is None:
            r = {"type": "released", "t0": t0, "t1": t1}
        elif isinstance(err, self.refusals):
            r = {"type": "not_owner", "error": f"{type(err).__name__}: {err}", "t0": t0, "t1": t1}
        elif isinstance(err, Cancelled):
            r = {"type": "cancelled", "error": str(err), "t0": t0, "t1": t1}
        else:
            r = outcome_of(err, t0, t1)
        if throw is not None:
            r["raised"] = ex.raised
        return r

    def shutdown(self, grace_s):
        """SIGTERM (the sigterm extension): what the application's code does
        as SystemExit unwinds it: every scope is left with the exception
        (its exit releases), every lease held in the explicit idiom is
        released by its finally; then the clients are closed."""
        deadline = now() + int(grace_s * 1e9)
        for lease in list(self.scopes):
            sc = self.scopes.pop(lease)
            try:
                self.leave_scope(sc, Shutdown())
            except BaseException as e:  # noqa: B036
                log(f"shutdown: leaving {lease}: {type(e).__name__}: {e}")
            if now() > deadline:
                break
        for lease in list(self.leases):
            lock = self.leases.pop(lease)
            if now() > deadline:
                break
            try:
                self.do_release(lock)
            except BaseException as e:  # noqa: B036
                log(f"shutdown: releasing {lease}: {type(e).__name__}: {e}")
        self.close()

    def extend(self, lease, ttl_ms):
        lock = self.hold(lease)
        sc = self.scopes.get(lease)
        if isinstance(sc, ThreadScope):
            # Inside the block, on its thread (a thread-local token is there).
            return self.timed(lambda: sc.call(lambda: self.do_extend(lock, ttl_ms), bound=2 * self.command_timeout + 5),
                              "extended")
        return self.timed(lambda: self.do_extend(lock, ttl_ms), "extended")

    def do_extend(self, lock, ttl_ms):
        raise Unsupported("unsupported: extend")

    def hold(self, lease):
        h = self.leases.get(lease)
        if h is None:
            raise KeyError(f"no lease {lease!r}")
        return h

    def reset(self):
        """The reset extension (warm drivers): the run is over; its clients
        are closed and the next init makes new ones. Refused while a lease
        is held or a scope open (a renewer would outlive the run)."""
        if self.leases or self.scopes:
            return {"type": "error", "error": f"reset: {len(self.leases)} leases held, {len(self.scopes)} scopes open"}
        self.close()
        self.clients = ()
        return {"type": "reset_ok"}

    def close(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass

    clients = ()


# connections ----------------------------------------------------------------


def connection_kwargs(lock, socket_timeout=None, ep=None, asyncio=False):
    """The redis-py connection options of a lockchaos client: its name on
    every connection, the scenario's command timeout, and no retry of a
    command whose connection broke or timed out unless the retries option
    asks for it (a re-sent SET NX or release could run twice, and its
    outcome be misreported)."""
    from redis.backoff import NoBackoff

    if asyncio:
        from redis.asyncio.retry import Retry
    else:
        from redis.retry import Retry

    t = socket_timeout if socket_timeout is not None else lock.command_timeout
    kw = dict(client_name=lock.conn_name, socket_timeout=t, socket_connect_timeout=lock.command_timeout,
              retry=Retry(NoBackoff(), lock.retries))
    if ep and ep.get("password"):
        kw["password"] = ep["password"]
    return kw


def address_remap(ep):
    """An endpoint's addr_map (announced "host:port" -> the "host:port" to
    dial): the nodes a Redis Cluster's slot map names, and the master Sentinel
    names, are the servers' own addresses; lockchaos's per-client proxies stand
    in front of them."""
    m = ep.get("addr_map") or {}
    if not m:
        return None
    table = {split_addr(k): split_addr(v) for k, v in m.items()}
    return lambda addr: table.get((addr[0], int(addr[1])), addr)


def clients(lock, socket_timeout=None, asyncio=False):
    """One redis-py client per endpoint (independent masters: several), sync
    or asyncio (the same classes under redis.asyncio)."""
    if asyncio:
        import redis.asyncio as r
        import redis.asyncio.cluster as rc
        import redis.asyncio.sentinel as rs
    else:
        import redis as r
        import redis.cluster as rc
        import redis.sentinel as rs

    out = []
    for ep in lock.endpoints:
        kw = connection_kwargs(lock, socket_timeout, ep, asyncio)
        if lock.topology == "sentinel":
            s = rs.Sentinel([split_addr(a) for a in ep["sentinels"]],
                            sentinel_kwargs={"client_name": lock.conn_name, "socket_timeout": lock.command_timeout},
                            **kw)
            remap_master(s, address_remap(ep), asyncio)
            out.append(s.master_for(ep["master_name"]))
        elif lock.topology == "cluster":
            nodes = [rc.ClusterNode(*split_addr(a)) for a in (ep.get("cluster") or [ep["addr"]])]
            remap = address_remap(ep)
            if remap is not None and not asyncio:
                remap_every_node(rc)
            out.append(rc.RedisCluster(startup_nodes=nodes, address_remap=remap, **kw))
        else:
            host, port = split_addr(ep["addr"])
            out.append(r.Redis(host=host, port=port, **kw))
    return out


def remap_every_node(rc):
    """Every node connection a sync redis-py cluster client makes dials through its
    address_remap, wherever the client took the address from: on a loaded machine its
    topology refresh after a timeout left sync clients (pottery, python-redis-lock) with
    connections to a node's own address, lock commands on them, past lockchaos's link
    faults (test_topologies' test_cluster). NodesManager.create_redis_node is where
    each node's client is made; patched once per process."""
    nm = getattr(rc, "NodesManager", None)
    orig = getattr(nm, "create_redis_node", None)
    if orig is None or getattr(orig, "lockchaos_remaps", False):
        return

    def create_redis_node(self, host, port, **kwargs):
        remap = getattr(self, "address_remap", None)
        if remap is not None:
            host, port = remap((host, int(port)))
        return orig(self, host, port, **kwargs)

    create_redis_node.lockchaos_remaps = True
    nm.create_redis_node = create_redis_node


def remap_master(sentinel, remap, asyncio):
    """Dials the master Sentinel names through the address map."""
    if remap is None:
        return
    discover = sentinel.discover_master
    if asyncio:
        async def remapped(name):
            return remap(await discover(name))
    else:
        def remapped(name):
            return remap(discover(name))
    sentinel.discover_master = remapped


def ping_all(clients):
    """Opens (and so names) each client's first connection now; a node that
    is down at init is logged, not fatal (the library connects again later)."""
    for c in clients:
        try:
            c.ping()
        except Exception as e:
            log(f"init: PING failed: {type(e).__name__}: {e}")
