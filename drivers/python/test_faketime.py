"""A client clock fault takes effect inside a driver: libfaketime (Debian's
libfaketime package) preloaded into the driver process, measured with the
protocol's clock request against this process's own clocks."""

import os
import time

import pytest

from conftest import DRIVER

LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

pytestmark = pytest.mark.skipif(not os.path.exists(LIB), reason=f"{LIB} missing: apt-get install -y libfaketime")


def offsets(d):
    """(wall, mono) of the driver less ours, in seconds, at the request's midpoint."""
    m0, w0 = time.monotonic_ns(), time.time_ns()
    r = d.call({"type": "clock"}, timeout=5)
    m1, w1 = time.monotonic_ns(), time.time_ns()
    assert r["type"] == "clock_ok", r
    return (r["wall_ns"] - (w0 + w1) / 2) / 1e9, (r["mono_ns"] - (m0 + m1) / 2) / 1e9, r


def start(drivers, driver_python, **env):
    d = drivers([driver_python, DRIVER, "redis-py"], env=dict(env, LD_PRELOAD=LIB))
    d.call({"type": "ping"})  # the process is up
    return d


def test_offset_shifts_wall_and_monotonic(drivers, driver_python):
    d = start(drivers, driver_python, FAKETIME="+5s")
    wall, mono, _ = offsets(d)
    assert abs(wall - 5) < 0.5, wall
    # libfaketime 0.9.10 moves CLOCK_MONOTONIC too: onto the faked wall clock's scale.
    assert abs(mono) > 4.5, mono
    k = start(drivers, driver_python, FAKETIME="+5s", FAKETIME_DONT_FAKE_MONOTONIC="1")
    wall, mono, _ = offsets(k)
    assert abs(wall - 5) < 0.5 and abs(mono) < 0.5, (wall, mono)


def test_offset_changed_in_flight(drivers, driver_python, tmp_path):
    ts = tmp_path / "faketime"
    ts.write_text("+5s\n")
    d = start(drivers, driver_python, FAKETIME_TIMESTAMP_FILE=str(ts), FAKETIME_NO_CACHE="1")
    wall0, mono0, _ = offsets(d)
    assert abs(wall0 - 5) < 0.5, wall0
    ts.write_text("+60s\n")
    wall1, mono1, _ = offsets(d)
    assert abs(wall1 - 60) < 0.5, wall1
    assert abs((mono1 - mono0) - 55) < 0.5, (mono0, mono1)  # the monotonic clock jumps with it
    ts.write_text("-2s\n")
    wall2, mono2, _ = offsets(d)
    assert abs(wall2 + 2) < 0.5 and abs((mono2 - mono1) + 62) < 0.5, (wall2, mono1, mono2)


def test_rate(drivers, driver_python, tmp_path):
    ts = tmp_path / "faketime"
    ts.write_text("+0 x2\n")
    d = start(drivers, driver_python, FAKETIME_TIMESTAMP_FILE=str(ts), FAKETIME_NO_CACHE="1")
    _, _, a = offsets(d)
    t = time.monotonic_ns()
    time.sleep(0.6)
    _, _, b = offsets(d)
    real = (time.monotonic_ns() - t) / 1e9
    rate_mono = (b["mono_ns"] - a["mono_ns"]) / 1e9 / real
    rate_wall = (b["wall_ns"] - a["wall_ns"]) / 1e9 / real
    assert 1.7 < rate_mono < 2.3 and 1.7 < rate_wall < 2.3, (rate_mono, rate_wall)

