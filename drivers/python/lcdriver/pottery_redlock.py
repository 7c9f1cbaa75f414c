"""pottery's Redlock over independent masters: SET NX PX on every master from
a thread pool, held when a majority answered yes within the validity time
(auto_release_time less 1% drift); Lua compare-and-act release and extend
(PEXPIRE to auto_release_time), each a majority; at most num_extensions
extensions. A failed acquire releases what it got.

By default the library swallows a master's RedisError (logs it, counts it as
a no): a False, or a ReleaseUnlockedLock / ExtendUnlockedLock, can so hide a
timeout. This driver keeps them apart: an outcome short of a majority with
any RedisError in it (caught from pottery's log during the call, or carried
by the exception) is indeterminate, one without is the refusal.

Adaptation: the lock key is the key lockchaos gives (pottery would name it
"redlock:"+key); what pottery sends is otherwise unchanged.
"""

import logging
import threading

from .base import BaseLock, Indeterminate, clients, ping_all


class _Errors(logging.Handler):
    """Collects the RedisErrors pottery logs (logger.exception) during a call."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.mu = threading.Lock()
        self.seen = []

    def emit(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            with self.mu:
                self.seen.append(exc)

    def take(self):
        with self.mu:
            s, self.seen = self.seen, []
        return s


class _Scope:
    """`with redlock:` as the application writes it, with the driver's
    reading of the masters' errors around its entry and exit: a no short of
    a majority with master errors in it is unknown (PotteryRedlock.unknown)."""

    def __init__(self, drv, lock):
        self.drv, self.lock = drv, lock

    def __enter__(self):
        self.drv.errors.take()
        try:
            return self.lock.__enter__()
        except self.drv.QuorumNotAchieved as e:
            errs = self.drv.errors.take()
            if errs:
                self.drv.unknown("not acquired", errs, e)
            raise

    def __exit__(self, *exc):
        self.drv.errors.take()
        try:
            return self.lock.__exit__(*exc)
        except self.drv.ReleaseUnlocked as e:
            errs = list(e.redis_errors or []) or self.drv.errors.take()
            if errs:
                self.drv.unknown("not released", errs, e)
            raise


class PotteryRedlock(BaseLock):
    name = "pottery-redlock"
    library = "pottery"
    capabilities = ["multi-node"]
    reports = []
    own_options = ["num_extensions", "retry_delay_ms"]
    # The README's first idiom is acquire() ... release(); then `with printer_lock:`.
    apis = ["acquire", "with"]

    def connect(self):
        import pottery
        import pottery.exceptions

        self.Redlock = pottery.Redlock
        self.ReleaseUnlocked = pottery.exceptions.ReleaseUnlockedLock
        self.ExtendUnlocked = pottery.exceptions.ExtendUnlockedLock
        self.refusals = (self.ReleaseUnlocked, self.ExtendUnlocked)
        self.QuorumNotAchieved = pottery.exceptions.QuorumNotAchieved
        self.enter_refusals = (self.QuorumNotAchieved,)
        self.clients = clients(self)
        ping_all(self.clients)
        self.num_extensions = int(self.extra.get("num_extensions", 3))  # the library's default
        # A waiting acquire sleeps uniform(0, Redlock._RETRY_DELAY) between rounds, 200 ms by
        # default: retry_delay_ms sets it in a subclass (Redlock has __slots__), else the library's.
        rd = self.extra.get("retry_delay_ms")
        if rd not in (None, ""):
            self.Redlock = type("Redlock", (pottery.Redlock,), {"__slots__": (), "_RETRY_DELAY": float(rd) / 1000.0})
        # auto_release_time is in seconds since pottery 3.0, in milliseconds before.
        self.unit = 1000.0 if int(self.version().split(".")[0]) >= 3 else 1
        self.errors = _Errors()
        lg = logging.getLogger("pottery")
        lg.addHandler(self.errors)
        err = logging.StreamHandler()  # stderr, kept by lockchaos
        err.setLevel(logging.WARNING)
        lg.addHandler(err)
        lg.setLevel(logging.INFO)

    def new_lock(self, key, ttl_ms, lease):
        lock = self.Redlock(key=key, masters=self.clients, auto_release_time=self.release_time(ttl_ms),
                            num_extensions=self.num_extensions)
        lock._Primitive__key = key
        return lock

    def scope_cm(self, lock, wait_ms):
        """`with lock:` enters with context_manager_blocking and _timeout,
        the idiom's own bound of its wait."""
        lock.context_manager_blocking = wait_ms > 0
        lock.context_manager_timeout = wait_ms / 1000.0 if wait_ms > 0 else -1
        return _Scope(self, lock)

    def release_time(self, ttl_ms):
        return ttl_ms / self.unit if self.unit != 1 else int(ttl_ms)

    def unknown(self, what, errs, cause=None):
        """A no short of a majority with master errors in it: the outcome is unknown."""
        e = errs[0]
        raise Indeterminate(f"{what}, with {len(errs)} master error(s): {type(e).__name__}: {e}") from cause

    def do_acquire(self, lock, ttl_ms, wait_ms):
        self.errors.take()
        if wait_ms > 0:
            ok = lock.acquire(blocking=True, timeout=wait_ms / 1000.0)
        else:
            ok = lock.acquire(blocking=False)
        errs = self.errors.take()
        if not ok and errs:
            self.unknown("not acquired", errs)
        return ok

    def majority_call(self, call, what):
        self.errors.take()
        try:
            call()
        except self.refusals as e:
            errs = list(e.redis_errors or []) or self.errors.take()
            if errs:
                self.unknown(what, errs, e)
            raise

    def do_release(self, lock):
        self.majority_call(lock.release, "not released")

    def do_extend(self, lock, ttl_ms):
        # TooManyExtensions (past num_extensions) is the library's own refusal: an error.
        lock.auto_release_time = self.release_time(ttl_ms)
        self.majority_call(lock.extend, "not extended")

    def token(self, lock):
        return lock._uuid
