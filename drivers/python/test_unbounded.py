"""bounded_acquire, on a fake client (no server): its answers at wait_ms's end."""
import threading
import time

import pytest

from lcdriver import Counted, Indeterminate, bounded_acquire


class Fake:
    """set sleeps `delay` and returns `result` (or raises it)."""

    def __init__(self, delay=0.001, result=False):
        self.delay, self.result, self.sets = delay, result, 0

    def set(self, *a, **kw):
        self.sets += 1
        time.sleep(self.delay)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def forever(r):
    """A library's acquire that retries until it wins, swallowing its errors, no pause between."""
    def acquire():
        while True:
            try:
                if r.set("k", "t", nx=True):
                    return
            except Exception:
                pass
    return acquire


def test_refused_every_time_is_not_acquired_even_with_a_set_in_flight_at_the_end():
    # A tight retry loop: at the deadline a SET is in flight almost always. Before the acquire
    # was abandoned, the loop sent its next SET while the answer was being made, and a loaded
    # machine saw it in flight: indeterminate where every attempt had been refused.
    for _ in range(50):
        fake = Fake()
        r = Counted(fake)
        assert bounded_acquire(forever(r), lambda: None, r, 0, 0.02) is False
        sent = fake.sets
        time.sleep(0.03)
        assert fake.sets == sent, "the abandoned acquire sent more commands"


def test_a_failed_command_is_indeterminate():
    r = Counted(Fake(result=ConnectionError("reset")))
    with pytest.raises(Indeterminate, match="failed"):
        bounded_acquire(forever(r), lambda: None, r, 0, 0.02)


def test_a_command_in_flight_past_the_timeout_is_indeterminate_and_a_late_win_given_back():
    fake = Fake(delay=0.2, result=True)
    r = Counted(fake)
    released = threading.Event()
    with pytest.raises(Indeterminate, match="in flight"):
        bounded_acquire(forever(r), released.set, r, 0, 0.02)
    assert released.wait(1), "the SET that won after the answer was not given back"


def test_a_win_within_the_wait_is_acquired():
    r = Counted(Fake(result=True))
    assert bounded_acquire(forever(r), lambda: None, r, 100, 0.02) is True
