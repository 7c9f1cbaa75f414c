#!/usr/bin/env python3
"""Writes the driver's class-data-sharing archive (AppCDS): one training run of the jar against a
redis-server started here on a free loopback port (hello, init, acquire, re-enter, wait, release,
shutdown), with -XX:ArchiveClassesAtExit. run.sh then starts the JVM with the archive: the classes
Redisson and Netty load come mapped rather than parsed, and init_ok comes about 2-3 times sooner.

    python3 drivers/java/train_cds.py JAR ARCHIVE JAVA_FLAG...
The archive is only good for this jar (path and time stamp) and this JVM; a JVM that cannot use it
says so on stderr and starts without it.
"""
import os
import sys
import tempfile

from lcproto import Driver, start_redis

jar, archive, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
redis, port = start_redis()
java = None
try:
    tmp = archive + ".tmp"
    log = tempfile.TemporaryFile()  # the dump's warnings (classes CDS skips): shown on failure only
    java = Driver(["java"] + flags + ["-XX:ArchiveClassesAtExit=" + tmp, "-jar", jar, "--lock", "redisson"], stderr=log)
    req = java.req

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
    if java.proc.wait(60) != 0 or not os.path.exists(tmp):
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-2000:])
        raise RuntimeError("training: the JVM wrote no archive")
    os.replace(tmp, archive)
finally:
    if java:
        java.kill()
    redis.kill()
    redis.wait()
