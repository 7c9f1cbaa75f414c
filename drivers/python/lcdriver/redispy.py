"""redis-py's Lock (redis.lock.Lock), sync: SET NX PX, a Lua compare-and-delete
release and a Lua extend. It does not renew by itself and reports nothing but
its token. The server's refusal raises LockNotOwnedError (not_owner). A plain
LockError is the Lock refusing without asking the server (it holds no token:
the sync Lock forgets its token before the release script runs, so a release
that timed out cannot be retried): an error, not a refusal. A timeout or a
broken connection raises redis's TimeoutError / ConnectionError:
indeterminate."""

from .base import BaseLock, parse_bool, ping_all, clients


class RedisPyLock(BaseLock):
    name = "redis-py"
    library = "redis"
    capabilities = []
    reports = []
    own_options = ["blocking", "thread_local", "sleep", "timeout"]
    # `with r.lock(name, timeout=…, blocking_timeout=…):` first, as redis-py's
    # docs use it; acquire()/release() in a finally second.
    apis = ["with", "acquire"]

    def connect(self):
        import redis.exceptions
        import redis.lock

        self.Lock = redis.lock.Lock
        # The server's refusal. A plain LockError is the Lock's own (it holds no token, e.g. a release
        # retried after one that timed out: the sync Lock forgets its token first): not the server's.
        self.refusals = (redis.exceptions.LockNotOwnedError,)
        # What `with lock:` raises when the acquire gave up: LockError("Unable to acquire lock ...").
        self.enter_refusals = (redis.exceptions.LockError,)
        # One key per lock: with independent masters it uses the first only.
        self.clients = clients(self)[:1]
        ping_all(self.clients)
        self.options_from_extra()

    def options_from_extra(self):
        """The library's defaults (sleep 0.1 s between tries, thread_local)
        unless an option says otherwise; the TTL is the scenario's
        (timeout=none: the library's default, a key that never expires)."""
        self.blocking = parse_bool(self.extra.get("blocking", "true"))
        self.thread_local = parse_bool(self.extra.get("thread_local", "true"))
        self.sleep = float(self.extra.get("sleep", "0.1"))
        t = self.extra.get("timeout", "")
        if t not in ("", "none", "ttl"):
            raise ValueError(f"timeout={t}: want ttl (the scenario's) or none (the library's default)")
        self.no_timeout = t == "none"

    def new_lock(self, key, ttl_ms, lease):
        return self.Lock(self.clients[0], key, timeout=None if self.no_timeout else ttl_ms / 1000.0, sleep=self.sleep,
                         blocking=self.blocking, thread_local=self.thread_local)

    def scope_cm(self, lock, wait_ms):
        """`with lock:` enters by acquire() with the Lock's own blocking and
        blocking_timeout: the wait, bounded by the idiom's own means."""
        lock.blocking = self.blocking and wait_ms > 0
        lock.blocking_timeout = wait_ms / 1000.0 if lock.blocking else None
        return lock

    def wait_args(self, wait_ms):
        """wait_ms 0: one attempt; else the Lock's blocking wait bounded by wait_ms
        (unless the blocking option is off: then always one attempt)."""
        blocking = self.blocking and wait_ms > 0
        return {"blocking": blocking, "blocking_timeout": wait_ms / 1000.0 if blocking else None}

    def do_acquire(self, lock, ttl_ms, wait_ms):
        return lock.acquire(**self.wait_args(wait_ms))

    def do_release(self, lock):
        lock.release()

    def do_extend(self, lock, ttl_ms):
        # The protocol's extend sets the TTL (replace_ttl); the library's default adds to it.
        lock.extend(ttl_ms / 1000.0, replace_ttl=True)

    def token(self, lock):
        return lock.local.token
