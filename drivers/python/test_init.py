"""init tells lockchaos why it failed: a lock that could not reach its servers answers an error
with unavailable (the machine's failure), a refused option an error without it. No server."""

from lcdriver.base import BaseLock


class Connecting(BaseLock):
    """A lock whose connect raises what it was given (None: connects)."""

    def __init__(self, raises=None):
        super().__init__()
        self.raises = raises

    def version(self):
        return "0"

    def connect(self):
        if self.raises is not None:
            raise self.raises


INIT = {"type": "init", "conn_name": "lc-t-c1", "endpoints": [{"addr": "127.0.0.1:1"}],
        "options": {"command_timeout_ms": 100, "extra": {}}}


def test_a_connection_refused_is_unavailable():
    r = Connecting(ConnectionRefusedError(111, "Connection refused")).init(INIT)
    assert (r["type"], r.get("unavailable")) == ("error", True), r
    assert "Connection refused" in r["error"], r


def test_a_refused_option_or_a_lock_error_is_not():
    bad = dict(INIT, options={"extra": {"colour": "blue"}})
    r = Connecting().init(bad)
    assert (r["type"], "unavailable" in r) == ("error", False), r
    r = Connecting(ValueError("no such mode")).init(INIT)
    assert (r["type"], "unavailable" in r) == ("error", False), r
    assert Connecting().init(INIT)["type"] == "init_ok"
