#!/usr/bin/env python3
"""Measures what each of the JVM driver's start-up choices saves (issue 43): the driver started
with each set of JVM flags, several times, against a redis-server started here on a free loopback
port, through the lock-client protocol as lockchaos speaks it (hello, init with the lock file's
options, acquire and release cycles, shutdown).

    python3 drivers/java/startup.py [--runs N] [--cycles N] [JAR]

Per configuration it prints the median of the runs: the milliseconds from the process's start to
hello's answer and to init_ok (which includes the lock file's warm-up calls), the first acquire,
the wall time of the cycles after it, the resident set size after them (VmRSS) and the peak
(VmHWM). The configurations add one choice at a time to a bare `java -jar`, up to what run.sh
passes: C1 only, the serial collector and no perf-data file (without class-data sharing), the
JDK's own class-data archive, the jar's AppCDS archive (train_cds.py), then a small heap. The archive must exist
(scripts/drivers-java.sh writes it).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from lcproto import Driver, start_redis

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--cycles", type=int, default=500)
ap.add_argument("jar", nargs="?", default=os.path.join(here, "target", "lockchaos-driver-java.jar"))
args = ap.parse_args()
jsa = args.jar[:-len(".jar")] + ".jsa"
if not os.path.exists(jsa):
    sys.exit("startup.py: no class-data archive %s (run scripts/drivers-java.sh)" % jsa)
fast = subprocess.run(["sh", os.path.join(here, "run.sh"), "--print-java-flags"],
                      capture_output=True, text=True, check=True).stdout.split()
small = ["-Xms16m", "-Xmx64m", "-Xss512k"]  # measured, not shipped (README.md)
configs = [
    ("java -jar (no flags)", []),
    ("+ C1, serial GC, no perf data, -Xshare:off", [f for f in fast if not f.startswith("-Xshare")] + ["-Xshare:off"]),
    ("+ the JDK's class-data archive", fast),
    ("+ the jar's AppCDS archive (run.sh: shipped)", fast + ["-XX:SharedArchiveFile=" + jsa]),
    ("+ a small heap " + " ".join(small), fast + ["-XX:SharedArchiveFile=" + jsa] + small),
]


def status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024  # MiB
    return 0


def once(flags, run):
    t0 = time.monotonic()
    java = Driver(["java"] + flags + ["-jar", args.jar, "--lock", "redisson"])
    req = java.req
    try:
        req({"type": "hello", "protocol": 1})
        hello = time.monotonic()
        prefix = "lc:startup:%d:" % run
        req({"type": "init", "client": 1, "conn_name": "lockchaos-startup", "key_prefix": prefix, "topology": "single",
             "endpoints": [{"addr": "127.0.0.1:%d" % port}],
             "options": {"ttl_ms": 1000, "command_timeout_ms": 10000, "extra": {"warmup": "true"}}})
        init = time.monotonic()
        a = req({"type": "acquire", "key": prefix + "k", "ttl_ms": 1000, "wait_ms": 0})
        first = time.monotonic()
        req({"type": "release", "lease": a["lease"]})
        c0 = time.monotonic()
        for i in range(args.cycles):
            a = req({"type": "acquire", "key": prefix + "k%d" % (i % 4), "ttl_ms": 1000, "wait_ms": 0})
            req({"type": "release", "lease": a["lease"]})
        c1 = time.monotonic()
        rss, hwm = status(java.proc.pid, "VmRSS"), status(java.proc.pid, "VmHWM")
        req({"type": "shutdown"})
        java.proc.wait(30)
        return [(hello - t0) * 1e3, (init - t0) * 1e3, (first - init) * 1e3, (c1 - c0) * 1e3, rss, hwm]
    finally:
        java.kill()


redis, port = start_redis()
try:
    print("| JVM flags | hello ms | init_ok ms | first acquire ms | %d cycles ms | RSS MiB | peak RSS MiB |" % args.cycles)
    print("|---|---:|---:|---:|---:|---:|---:|")
    results = {name: [] for name, _ in configs}
    for run in range(args.runs):  # interleaved, so a busy moment falls on every configuration alike
        for name, flags in configs:
            results[name].append(once(flags, run))
    for name, _ in configs:
        med = [statistics.median(col) for col in zip(*results[name])]
        print("| %s | %.0f | %.0f | %.1f | %.0f | %d | %d |" % ((name,) + tuple(med)))
    sys.stdout.flush()
finally:
    redis.kill()
    redis.wait()
