"""python-redis-lock's Lock (redis_lock.Lock): SET NX EX in whole seconds, a
BLPOP on a signal list to wait (the release pushes to it), and, with
auto_renewal, a daemon thread that extends the key (EXPIRE, seconds) every
2/3 of expire. Release and extend are Lua compare-and-act scripts; a refusal
raises NotAcquired. The renewal thread dies on its first failure, silently to
the user (a traceback on stderr): the lock pushes no lost signal, so this
driver reports only the renewals it sees by wrapping extend.

Adaptations, none of them changing what the library sends but the key names:
- the lock key is the key lockchaos gives (the library would name it
  "lock:"+name), and the signal list is <key_prefix>lock-signal:{<key>} (the
  hash tag keeps both keys of the release script in one cluster slot);
- ttl_ms and wait_ms become whole seconds, rounded up (the library int()s
  them, and a 0 would mean no expiry, or an unbounded wait);
- a wait longer than expire without auto_renewal is cut to expire (the
  library raises TimeoutTooLarge otherwise);
- the connections' read timeout is the command timeout plus the longest
  BLPOP, or every wait would end in a socket timeout.
"""

import math
import threading

from .base import BaseLock, clients, now, parse_bool, ping_all


def hashtag(key):
    i = key.find("{")
    if i >= 0:
        j = key.find("}", i + 1)
        if j > i + 1:
            return key[i + 1:j]
    return None


def secs(ms):
    return max(1, math.ceil(ms / 1000.0))


class PyRedisLock(BaseLock):
    name = "python-redis-lock"
    library = "python-redis-lock"
    capabilities = ["renews"]
    reports = ["renewals"]
    own_options = ["auto_renewal", "expire"]
    # The README's first idiom is acquire(blocking=False) ... release(); then
    # `with redis_lock.Lock(conn, name):`, whose entry waits without a bound
    # (the driver bounds it: BaseLock.enter_scope).
    apis = ["acquire", "with"]
    scope_unbounded = True

    def connect(self):
        import redis
        import redis_lock

        # AlreadyAcquired: this Lock's id is the key's value already (a refusal of a second acquire).
        self.refusals = (redis_lock.NotAcquired, redis_lock.AlreadyAcquired)
        # One subclass per process: the library registers its scripts on the first Lock class
        # it meets (a module global says they are), so a second one (a reset driver's next
        # run) would have none.
        if getattr(self, "Lock", None) is None:
            self.Lock = self.lock_class(redis_lock)
        self.auto_renewal = parse_bool(self.extra.get("auto_renewal", "true"))
        self.expire = int(self.extra["expire"]) if self.extra.get("expire") else None
        self.max_wait = secs(self.opt_ms("acquire_timeout_ms", 1000))
        # `with` waits by BLPOP for expire seconds at a time (its acquire has no timeout).
        longest = self.max_wait if self.api != "with" else max(self.max_wait, self.expire or secs(self.opt_ms("ttl_ms", 1000)))
        self.clients = clients(self, socket_timeout=self.command_timeout + longest)[:1]
        self.strict = isinstance(self.clients[0], redis.StrictRedis)
        ping_all(self.clients)

    def lock_class(self, redis_lock):
        driver = self

        class Lock(redis_lock.Lock):
            lc_lease = None

            def extend(self, expire=None):
                if threading.current_thread() is not self._lock_renewal_thread:
                    return super().extend(expire)
                # The renewal thread's call: seen, pushed, and then as the library would.
                t0 = now()
                try:
                    super().extend(expire)
                except redis_lock.NotAcquired:
                    driver.push_renewal(self.lc_lease, t0, now(), "not_owner")
                    raise
                except Exception:
                    driver.push_renewal(self.lc_lease, t0, now(), "indeterminate")
                    raise
                driver.push_renewal(self.lc_lease, t0, now(), "ok")

        return Lock

    def push_renewal(self, lease, t0, t1, outcome):
        if self.push and lease:
            self.push({"type": "renewal", "lease": lease, "t0": t0, "t1": t1, "outcome": outcome})

    def new_lock(self, key, ttl_ms, lease):
        lock = self.Lock(self.clients[0], key, expire=self.expire or secs(ttl_ms), auto_renewal=self.auto_renewal,
                         strict=self.strict)
        lock._name = key
        lock._signal = f"{self.key_prefix}lock-signal:{{{hashtag(key) or key}}}"
        lock.lc_lease = lease
        return lock

    def scope_cm(self, lock, wait_ms):
        return lock

    def do_acquire(self, lock, ttl_ms, wait_ms):
        if wait_ms <= 0:
            return lock.acquire(blocking=False)
        timeout = min(secs(wait_ms), self.max_wait)
        if not self.auto_renewal:
            timeout = min(timeout, lock._expire)
        return lock.acquire(blocking=True, timeout=timeout)

    def do_release(self, lock):
        lock.release()

    def do_extend(self, lock, ttl_ms):
        lock.extend(expire=secs(ttl_ms))

    def token(self, lock):
        return lock.id
