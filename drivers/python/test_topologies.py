"""The driver locks behind Sentinel and on a Redis Cluster (one node holding
every slot: the client's cluster mode, its slot checks included)."""

import os
import re
import socket
import subprocess
import time

import pytest

from conftest import DRIVER, Forwarder, RedisServer, free_port, kill, resp, running
from test_drivers import ALL

# Sync and asyncio clients are built by one function (lcdriver.base.clients): by default each
# topology runs the locks that cover both and their own cluster concerns (python-redis-lock's two
# keys in a script, pottery's cluster client as a master); LOCKCHAOS_LONG=1 runs every lock.
LONG = bool(os.environ.get("LOCKCHAOS_LONG"))
SENTINEL_LOCKS = ALL if LONG else ["redis-py-asyncio", "python-redis-lock"]
CLUSTER_LOCKS = ALL if LONG else ["redis-py-asyncio", "python-redis-lock", "pottery-redlock"]


@pytest.fixture(scope="module")
def master():
    with running(RedisServer()) as s:
        yield s


@pytest.fixture(scope="module")
def sentinel(master, tmp_path_factory):
    server = master
    port = free_port()
    conf = tmp_path_factory.mktemp("sentinel") / "sentinel.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\nsentinel monitor m 127.0.0.1 {server.port} 1\n")
    proc = subprocess.Popen(["redis-sentinel", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20  # a loaded machine starts slowly
        while True:
            try:
                if resp(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m", timeout=0.5):
                    break
            except (OSError, RuntimeError):
                pass
            assert time.monotonic() < deadline, "redis-sentinel did not start"
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        kill(proc, os.kill)


@pytest.fixture(scope="module")
def cluster_node(tmp_path_factory):
    conf = tmp_path_factory.mktemp("cluster") / "nodes.conf"
    with running(RedisServer(["--cluster-enabled", "yes", "--cluster-config-file", str(conf)])) as s:
        resp(s.port, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        deadline = time.monotonic() + 20  # a loaded machine starts slowly
        while "cluster_state:ok" not in resp(s.port, "CLUSTER", "INFO"):
            assert time.monotonic() < deadline, "cluster did not come up"
            time.sleep(0.05)
        yield s


@pytest.fixture
def master_px(master):
    """A proxy in front of the master; a fixture, so that it outlives the test's drivers
    (set up before them, it is stopped after them)."""
    with running(Forwarder(master.addr)) as px:
        yield px


@pytest.fixture
def node_px(cluster_node):
    with running(Forwarder(cluster_node.addr)) as px:
        yield px


def through(port, px):
    """The drivers' connections on the server at port, all of which must have come
    through px; and every connection px carried named itself (CLIENT SETNAME, or
    HELLO's SETNAME) before anything else it sent past the handshake."""
    def direct_now():
        conns = [c for c in resp(port, "CLIENT", "LIST").splitlines() if "name=lc-t-" in c]
        ups = px.upstream_ports()
        return conns, {re.search(r"\bid=(\d+)", c).group(1): c for c in conns
                       if int(re.search(r"\baddr=[\d.]+:(\d+)", c).group(1)) not in ups}

    conns, direct = direct_now()
    if direct:
        # A connection of the previous case's drivers (the same names), killed a moment ago,
        # may still be listed on a loaded machine: its process gone (ss shows no owner), the
        # server yet to read its close. A direct connection of these drivers stays.
        time.sleep(0.5)
        conns, later = direct_now()
        direct = [c for i, c in later.items() if i in direct]
    assert not direct, f"connections that did not come through the proxy: {direct}"
    for head in px.first:
        # The handshake (HELLO, AUTH, CLIENT ...) may come in any order; the
        # first command past it must come after the name. A connection caught
        # in its handshake (HELLO sent, its reply not read yet) has sent
        # nothing past it: nothing to name yet.
        cmds = commands(bytes(head))
        first = next((i for i, c in enumerate(cmds) if c[0] not in ("HELLO", "AUTH", "CLIENT")), len(cmds))
        named = any(c[0] == "HELLO" and "SETNAME" in c or c[:2] == ["CLIENT", "SETNAME"] for c in cmds[:first])
        assert named or first == len(cmds), f"a connection that did not name itself: {bytes(head)[:200]!r}"
    return conns


def commands(head):
    """The complete RESP commands at the start of head, each as its words
    (upper case); a command cut off by the 1 KiB limit ends the list."""
    out, i = [], 0
    try:
        while i < len(head) and head[i:i + 1] == b"*":
            j = head.index(b"\r\n", i)
            n, i, words = int(head[i + 1:j]), j + 2, []
            for _ in range(n):
                j = head.index(b"\r\n", i)
                size = int(head[i + 1:j])
                if j + 2 + size > len(head):
                    return out
                words.append(head[j + 2:j + 2 + size].decode("latin-1").upper())
                i = j + 4 + size
            out.append(words)
    except ValueError:
        pass
    return out


def names(port):
    """The named connections, less Sentinel's own (sentinel-<id>-cmd, -pubsub)."""
    return sorted(n for n in re.findall(r"\bname=(\S+)", resp(port, "CLIENT", "LIST")) if not n.startswith("sentinel-"))


def contend(drivers, driver_python, lock, topology, endpoint):
    a, b = (drivers([driver_python, DRIVER, lock]) for _ in range(2))
    for d, n in ((a, "lc-t-c1"), (b, "lc-t-c2")):
        assert d.hello()["type"] == "hello_ok"
        r = d.init(None, n, topology=topology, endpoints=[endpoint])
        assert r["type"] == "init_ok", r
    key = f"lc:t:{topology}:{lock}"  # the servers are the module's: a key per test
    r = a.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})
    assert r["type"] == "acquired", r
    assert b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 0})["type"] == "not_acquired"
    assert a.call({"type": "release", "lease": r["lease"]})["type"] == "released"
    r = b.call({"type": "acquire", "key": key, "ttl_ms": 5000, "wait_ms": 500})
    assert r["type"] == "acquired", r
    return key, r


@pytest.mark.parametrize("lock", SENTINEL_LOCKS)
def test_sentinel(driver_python, master, sentinel, master_px, drivers, lock):
    """Sentinel names the master's own address; the drivers dial it through addr_map."""
    px = master_px
    key, r = contend(drivers, driver_python, lock, "sentinel",
                     {"master_name": "m", "sentinels": [sentinel], "addr_map": {master.addr: px.addr}})
    assert resp(master.port, "GET", key) == r["token"]
    assert set(names(master.port)) == {"lc-t-c1", "lc-t-c2"}
    through(master.port, px)
    sport = int(sentinel.rsplit(":", 1)[1])
    assert {"lc-t-c1", "lc-t-c2"} <= set(names(sport)), "the drivers' sentinel connections are named too"


@pytest.mark.parametrize("lock", CLUSTER_LOCKS)
def test_cluster(driver_python, cluster_node, node_px, drivers, lock):
    """The slot map names the node's own address; the drivers dial it through addr_map."""
    s, px = cluster_node, node_px
    key, r = contend(drivers, driver_python, lock, "cluster",
                     {"addr": px.addr, "cluster": [px.addr], "addr_map": {s.addr: px.addr}})
    assert resp(s.port, "GET", key) == r["token"]
    assert set(names(s.port)) == {"lc-t-c1", "lc-t-c2"}
    through(s.port, px)


def test_the_proxy_stopped_leaves_no_upstream(server):
    """The tests' proxy, stopped while it carries a connection, closes its upstream too: a
    connection left open, named as its client, read as one past the proxy in the next test."""
    px = Forwarder(server.addr)
    host, port = px.addr.rsplit(":", 1)
    c = socket.create_connection((host, int(port)))
    try:
        c.sendall(b"CLIENT SETNAME lc-t-leak\r\n")
        assert c.recv(100) == b"+OK\r\n"
        px.stop()
    finally:
        c.close()
    deadline = time.monotonic() + 2
    while "name=lc-t-leak" in resp(server.port, "CLIENT", "LIST"):
        assert time.monotonic() < deadline, "the proxy's upstream outlived it"
        time.sleep(0.02)
