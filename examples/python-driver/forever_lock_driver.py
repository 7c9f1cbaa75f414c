"""A lock with both traits a driver author meets most (docs/driver-protocol.md): it names its own
key ("lock:" + the name, outside lockchaos's key_prefix) and its acquire blocks until it wins,
with no timeout. The driver, on the Python kit, reports the key and bounds the wait itself."""
import os, sys, threading, time, uuid
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

class Counted:  # the library's client, counting its commands in flight and those that failed
    def __init__(self, r):
        self.r, self.busy, self.failed = r, 0, 0
    def __getattr__(self, name):
        def call(*a, **kw):
            self.busy += 1
            try:
                return getattr(self.r, name)(*a, **kw)
            except Exception:
                self.failed += 1  # before busy drops: a reader of busy then sees it
                raise
            finally:
                self.busy -= 1
        return call

class Driver(lcdriver.BaseLock):
    name = library = "forever-lock"
    refusals = (NotMine,)
    version = lambda self: "1.0"
    def connect(self):
        self.clients = lcdriver.clients(self)[:1]
        lcdriver.ping_all(self.clients)
    def new_lock(self, key, ttl_ms, lease):  # each acquire counts its own commands
        return ForeverLock(Counted(self.clients[0]), key)
    def do_acquire(self, lk, ttl_ms, wait_ms):  # race the blocking call against wait_ms
        won = threading.Event()
        t = threading.Thread(target=lambda: (lk.acquire(ttl_ms), won.set()), daemon=True)
        t.start()
        if won.wait(max(wait_ms / 1000, self.command_timeout)):  # wait_ms 0: its first attempt
            return True
        end = time.monotonic() + self.command_timeout
        while lk.r.busy and time.monotonic() < end:  # a SET in flight at the deadline: its answer decides
            time.sleep(0.001)
        if won.is_set():
            return True
        # Still trying: a lock it wins after the answer is released at once.
        threading.Thread(target=lambda: (t.join(), won.is_set() and lk.release()), daemon=True).start()
        if lk.r.busy or lk.r.failed:  # a SET in flight or lost: the server may have the key
            raise lcdriver.Indeterminate("wait_ms ended with a SET in flight or failed")
        return False
    def do_release(self, lk):
        if not lk.release():
            raise NotMine()
    def token(self, lk): return lk.token
    def keys(self, lk): return [lk.key]  # named by the library, outside key_prefix: reported

lcdriver.serve(Driver())
