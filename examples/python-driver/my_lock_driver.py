"""A team's own Redis lock (SET NX PX, Lua compare-and-delete) as a lockchaos driver, on the
Python driver kit (pip install ./drivers/python: lcdriver). The kit speaks the protocol
(docs/driver-protocol.md): the stdin thread that answers ping and clock at once, times around
each call, the reply shapes, a timeout or broken connection as indeterminate."""
import os, sys, time, uuid
try:
    import lcdriver
except ImportError:  # run from this repository without installing the kit
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "drivers", "python"))
    import lcdriver

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

class MyLock:  # the helper under test
    def __init__(self, r):
        self.r, self.release_script = r, r.register_script(RELEASE)
    def try_acquire(self, key, ttl_ms):
        token = uuid.uuid4().hex
        return token if self.r.set(key, token, nx=True, px=ttl_ms) else None
    def release(self, key, token):
        return self.release_script(keys=[key], args=[token]) == 1

class NotMine(Exception):
    """The release script found another owner's token (or none): not_owner."""

class Driver(lcdriver.BaseLock):
    name = library = "my-lock"
    refusals = (NotMine,)
    def version(self):
        return "1.0"
    def connect(self):  # one named redis-py client, the command timeout, no retries
        self.clients = lcdriver.clients(self)[:1]
        lcdriver.ping_all(self.clients)
        self.mine = MyLock(self.clients[0])
    def new_lock(self, key, ttl_ms, lease):
        return {"key": key, "token": None}
    def do_acquire(self, h, ttl_ms, wait_ms):  # the helper has no wait: retry until wait_ms
        deadline = time.monotonic() + wait_ms / 1000
        while (tok := self.mine.try_acquire(h["key"], ttl_ms)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        h["token"] = tok
        return tok is not None
    def do_release(self, h):
        if not self.mine.release(h["key"], h["token"]):
            raise NotMine()
    def token(self, h):
        return h["token"]

lcdriver.serve(Driver())
