"""The lock-client protocol from the caller's side, for the scripts beside the Java driver
(train_cds.py, startup.py): a driver process started with the given argv, one request at a time,
each answer matched to its id (pushed events are skipped)."""
import json
import socket
import subprocess
import time


class Driver:
    def __init__(self, argv, stderr=subprocess.DEVNULL):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        self.n = 0

    def req(self, m):
        """Sends m with the next id and returns its answer; an error or indeterminate answer raises."""
        self.n += 1
        self.proc.stdin.write(json.dumps(dict(m, id=self.n)) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("%s: the driver ended" % m["type"])
            reply = json.loads(line)
            if reply.get("in_reply_to", reply.get("id")) == self.n:
                break
        if reply.get("type") in ("error", "indeterminate"):
            raise RuntimeError("%s: %s" % (m["type"], reply))
        return reply

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_redis():
    """A redis-server of the script's own on a free loopback port, answering: (process, port)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return redis, port
