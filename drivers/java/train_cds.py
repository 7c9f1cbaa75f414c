#!/usr/bin/env python3
"""Writes the driver's class-data-sharing archive (AppCDS): one training run of the jar against a
redis-server started here on a free loopback port (hello, init, acquire, re-enter, wait, release,
shutdown), with -XX:ArchiveClassesAtExit. run.sh then starts the JVM with the archive: the classes
Redisson and Netty load come mapped rather than parsed, and init_ok comes about 2-3 times sooner.

    python3 drivers/java/train_cds.py JAR ARCHIVE JAVA_FLAG...
The archive is only good for this jar (path and time stamp) and this JVM; a JVM that cannot use it
says so on stderr and starts without it.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

jar, archive, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
java = None
try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    tmp = archive + ".tmp"
    log = tempfile.TemporaryFile()  # the dump's warnings (classes CDS skips): shown on failure only
    java = subprocess.Popen(["java"] + flags + ["-XX:ArchiveClassesAtExit=" + tmp, "-jar", jar, "--lock", "redisson"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    n = 0

    def req(m):
        global n
        n += 1
        java.stdin.write(json.dumps(dict(m, id=n)) + "\n")
        java.stdin.flush()
        reply = json.loads(java.stdout.readline())
        if reply.get("type") in ("error", "indeterminate"):
            raise RuntimeError("training: %s" % reply)
        return reply

    req({"type": "hello", "protocol": 1})
    req({"type": "init", "client": 1, "conn_name": "lockchaos-cds", "key_prefix": "lc:cds:", "topology": "single",
         "endpoints": [{"addr": "127.0.0.1:%d" % port}],
         "options": {"ttl_ms": 1000, "command_timeout_ms": 10000, "extra": {}}})
    for _ in range(3):
        a = req({"type": "acquire", "key": "lc:cds:k", "ttl_ms": 1000, "wait_ms": 0})
        b = req({"type": "acquire", "key": "lc:cds:k", "ttl_ms": 1000, "wait_ms": 50})
        req({"type": "release", "lease": b["lease"]})
        req({"type": "release", "lease": a["lease"]})
    req({"type": "ping"})
    req({"type": "clock"})
    req({"type": "shutdown"})
    if java.wait(60) != 0 or not os.path.exists(tmp):
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-2000:])
        raise RuntimeError("training: the JVM wrote no archive")
    os.replace(tmp, archive)
finally:
    if java and java.poll() is None:
        java.kill()
        java.wait()
    redis.kill()
    redis.wait()
