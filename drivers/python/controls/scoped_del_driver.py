"""A broken control for the API modes (issue 41): a team's lock helper whose explicit idiom is right
and whose scoped idiom is not, so that only the scoped mode shows the bug.

    helper.acquire(key) / helper.release(key, token)   SET NX PX; a Lua compare-and-delete  (api acquire, the default)
    with helper.held(key):                              the same acquire; the exit deletes with a plain DEL  (api with)

The mistake: the context manager's exit was written as the "obvious" cleanup, `DEL key`, without
the owner check the explicit release has. A holder whose key expired inside the block (it held
longer than the TTL) deletes the lock of whoever acquired it next when it leaves the block, and the
exit reports success. expire-then-unlock catches it in `with` (lock file scoped-del-with.yaml: unlock
and mutex invalid), never in `acquire` (scoped-del.yaml: valid): TestAPIModeCatchesAScopedControl.
It is a control, not a shipped lock: it lives here, not among drivers/python/*.yaml."""
import contextlib
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lcdriver  # noqa: E402

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class NotMine(Exception):
    """The release script found another owner's token (or none): not_owner."""


class NotAcquired(Exception):
    """The helper's wait ended without the key."""


class Helper:
    def __init__(self, r):
        self.r, self.release_script = r, r.register_script(RELEASE)

    def acquire(self, lock, ttl_ms, wait_ms):
        deadline = time.monotonic() + wait_ms / 1000
        while True:
            tok = uuid.uuid4().hex
            if self.r.set(lock["key"], tok, nx=True, px=ttl_ms):
                lock["token"] = tok
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def release(self, lock):
        if self.release_script(keys=[lock["key"]], args=[lock["token"]]) != 1:
            raise NotMine()

    @contextlib.contextmanager
    def held(self, lock, ttl_ms, wait_ms):
        if not self.acquire(lock, ttl_ms, wait_ms):
            raise NotAcquired()
        try:
            yield lock
        finally:
            self.r.delete(lock["key"])  # the bug: no owner check


class Driver(lcdriver.BaseLock):
    name = library = "scoped-del"
    apis = ["acquire", "with"]
    # The lease's deadline, from before the SET was sent: the workload acts
    # within it, as the built-in simple does, so only the release differs.
    reports = ["deadline"]
    refusals = (NotMine,)
    enter_refusals = (NotAcquired,)

    def version(self):
        return "1.0"

    def connect(self):
        self.clients = lcdriver.clients(self)[:1]
        lcdriver.ping_all(self.clients)
        self.helper = Helper(self.clients[0])

    def new_lock(self, key, ttl_ms, lease):
        return {"key": key, "token": None, "ttl_ms": ttl_ms}

    def do_acquire(self, lock, ttl_ms, wait_ms):
        return self.helper.acquire(lock, ttl_ms, wait_ms)

    def do_release(self, lock):
        self.helper.release(lock)

    def scope_cm(self, lock, wait_ms):
        return self.helper.held(lock, lock["ttl_ms"], wait_ms)

    def token(self, lock):
        return lock["token"]

    def acquired(self, lease, lock, t0, t1, tok=None):
        r = super().acquired(lease, lock, t0, t1, tok)
        r["deadline_ns"] = t0 + lock["ttl_ms"] * 1_000_000
        return r


lcdriver.serve(Driver())
