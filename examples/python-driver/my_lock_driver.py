"""A team's own Redis lock (SET NX PX, Lua compare-and-delete) as a lockchaos driver.
Protocol: docs/driver-protocol.md. stdin is read on its own thread so that ping and
clock are answered at once; the main thread runs one request at a time."""
import json, queue, sys, threading, time, uuid
import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

class MyLock:  # the helper under test
    def __init__(self, r):
        self.r, self.release_script = r, r.register_script(RELEASE)
    def try_acquire(self, key, ttl_ms):
        token = uuid.uuid4().hex
        return token if self.r.set(key, token, nx=True, px=ttl_ms) else None
    def release(self, key, token):
        return self.release_script(keys=[key], args=[token]) == 1

out, work, leases, now = threading.Lock(), queue.Queue(), {}, time.monotonic_ns

def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()

def reader():
    for line in sys.stdin:
        m = json.loads(line)
        if m["type"] == "ping": send({"in_reply_to": m["id"], "type": "pong", "t0": now(), "t1": now()})
        elif m["type"] == "clock": send({"in_reply_to": m["id"], "type": "clock_ok", "mono_ns": now(), "wall_ns": time.time_ns()})
        else: work.put(m)
    work.put({"type": "shutdown"})

def handle(m):
    global lock
    if m["type"] == "hello":
        return {"type": "hello_ok", "protocol": 1, "name": "my-lock", "library": "my-lock", "version": "1.0",
                "language": "python", "capabilities": [], "reports": [], "options": []}
    if m["type"] == "init":
        host, port = m["endpoints"][0]["addr"].rsplit(":", 1)
        t = m["options"].get("command_timeout_ms", 1000) / 1000
        lock = MyLock(redis.Redis(host, int(port), client_name=m["conn_name"], socket_timeout=t, retry=None))
        return {"type": "init_ok", "t0": now(), "t1": now()}
    if m["type"] == "shutdown":
        return {"type": "shutdown_ok"}
    t0 = now()
    try:
        if m["type"] == "acquire":
            deadline = time.monotonic() + m["wait_ms"] / 1000
            while (token := lock.try_acquire(m["key"], m["ttl_ms"])) is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if token is None:
                return {"type": "not_acquired", "t0": t0, "t1": now()}
            leases[token] = m["key"]
            return {"type": "acquired", "lease": token, "token": token, "depth": 1, "t0": t0, "t1": now()}
        if m["type"] == "release":
            ok = lock.release(leases.pop(m["lease"]), m["lease"])
            return {"type": "released" if ok else "not_owner", "t0": t0, "t1": now()}
        return {"type": "error", "error": "unsupported: " + m["type"]}
    except (redis.ConnectionError, redis.TimeoutError) as e:  # the server's answer is unknown
        return {"type": "indeterminate", "error": repr(e), "t0": t0, "t1": now()}
    except Exception as e:  # anything else: lockchaos records it as unknown too
        return {"type": "error", "error": repr(e), "t0": t0, "t1": now()}

threading.Thread(target=reader, daemon=True).start()
while True:
    m = work.get()
    send(dict(handle(m), in_reply_to=m.get("id")))
    if m["type"] == "shutdown":
        break
