#!/usr/bin/env python3
"""Probes the Redisson driver under libfaketime: start-up, the clocks the JVM sees (read with the
protocol's clock request), a lock held by the watchdog, and optionally a change in flight.

    python3 drivers/java/faketime_probe.py LIB ENV_JSON [NEW_FAKETIME]
    python3 drivers/java/faketime_probe.py /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 '{"FAKETIME":"+5s"}'
    echo '+0 x2' > /tmp/ft; python3 drivers/java/faketime_probe.py LIB \\
        '{"FAKETIME_TIMESTAMP_FILE":"/tmp/ft","FAKETIME_NO_CACHE":"1"}' '+0 x1'

NEW_FAKETIME is written to FAKETIME_TIMESTAMP_FILE after the acquire. A probe, not a test: it
prints what it saw. Its own redis-server and driver are stopped by pid.
"""
import json
import os
import select
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
lib, env_extra = sys.argv[1], json.loads(sys.argv[2])
change = sys.argv[3] if len(sys.argv) > 3 else None
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""], stdout=subprocess.DEVNULL)
time.sleep(0.3)
t = time.monotonic()
p = subprocess.Popen(["sh", os.path.join(HERE, "run.sh"), "--lock", "redisson"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                     env=dict(os.environ, LD_PRELOAD=lib, **env_extra))
n = 0


def req(m, timeout=30):
    global n
    n += 1
    p.stdin.write(json.dumps(dict(m, id=n)) + "\n")
    p.stdin.flush()
    if not select.select([p.stdout], [], [], timeout)[0]:
        raise SystemExit("HANG: no reply to %s within %d s" % (m["type"], timeout))
    return json.loads(p.stdout.readline())


def offsets():
    m0, w0 = time.monotonic_ns(), time.time_ns()
    c = req({"type": "clock"})
    m1, w1 = time.monotonic_ns(), time.time_ns()
    return (c["wall_ns"] - (w0 + w1) / 2) / 1e9, (c["mono_ns"] - (m0 + m1) / 2) / 1e9


try:
    req({"type": "hello", "protocol": 1})
    th = time.monotonic() - t
    i = req({"type": "init", "client": 1, "conn_name": "lockchaos-faketime", "key_prefix": "lc:ft:", "topology": "single",
             "endpoints": [{"addr": "127.0.0.1:%d" % port}],
             "options": {"ttl_ms": 1000, "command_timeout_ms": 1000, "extra": {"watchdog_timeout_ms": 1500}}}, 60)
    print("hello_ok %.0f ms, %s %.0f ms after the start" % (th * 1000, i["type"], (time.monotonic() - t) * 1000))
    w0, m0 = offsets()
    time.sleep(1)
    w1, m1 = offsets()
    print("offsets to the real clocks: wall %+.3f -> %+.3f s, monotonic %+.3f -> %+.3f s over 1 s (monotonic rate %.3f)"
          % (w0, w1, m0, m1, 1 + (m1 - m0)))
    a = req({"type": "acquire", "key": "lc:ft:k", "ttl_ms": 1000, "wait_ms": 0})
    print("acquire: %s in %.1f ms" % (a["type"], (a.get("t1", 0) - a.get("t0", 0)) / 1e6))
    if change:
        with open(env_extra["FAKETIME_TIMESTAMP_FILE"], "w") as f:
            f.write(change + "\n")
        time.sleep(0.3)
        w2, m2 = offsets()
        print("FAKETIME now %r: wall %+.3f s, monotonic %+.3f s" % (change, w2, m2))
    time.sleep(2)
    pttl = subprocess.run(["redis-cli", "-p", str(port), "PTTL", "lc:ft:k"], capture_output=True, text=True).stdout.strip()
    print("2 s later PTTL %s (watchdog 1500 ms: renewed while above 0); release: %s"
          % (pttl, req({"type": "release", "lease": a.get("lease", "")})["type"]))
    req({"type": "shutdown"})
finally:
    for proc in (p, redis):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
