"""A lock with both traits a driver author meets most (docs/driver-protocol.md): it names its own
key ("lock:" + the name, outside lockchaos's key_prefix) and its acquire blocks until it wins,
with no timeout. The driver, on the Python kit, reports the key and bounds the wait itself."""
import os, sys, time, uuid
try:
    import lcdriver
except ImportError:  # run from this repository without installing the kit
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "drivers", "python"))
    import lcdriver

class ForeverLock:  # the library under test
    def __init__(self, r, name):
        self.r, self.key, self.token = r, "lock:" + name, uuid.uuid4().hex
    def acquire(self, ttl_ms):  # blocks until it wins
        while not self.r.set(self.key, self.token, nx=True, px=ttl_ms):
            time.sleep(0.01)
    def release(self):
        return self.r.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
                           1, self.key, self.token) == 1

class NotMine(Exception): pass  # the release found another owner: not_owner

class Driver(lcdriver.BaseLock):
    name = library = "forever-lock"
    refusals = (NotMine,)
    version = lambda self: "1.0"
    def connect(self):
        self.clients = lcdriver.clients(self)[:1]
        lcdriver.ping_all(self.clients)
    def new_lock(self, key, ttl_ms, lease):  # each acquire counts its own failed commands
        return ForeverLock(lcdriver.Counted(self.clients[0]), key)
    def do_acquire(self, lk, ttl_ms, wait_ms):  # the kit bounds the blocking call by wait_ms
        return lcdriver.bounded_acquire(lambda: lk.acquire(ttl_ms), lk.release, lk.r, wait_ms, self.command_timeout)
    def do_release(self, lk):
        if not lk.release():
            raise NotMine()
    def token(self, lk): return lk.token
    def keys(self, lk): return [lk.key]  # named by the library, outside key_prefix: reported

lcdriver.serve(Driver())
