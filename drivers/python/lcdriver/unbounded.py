"""For a library whose acquire blocks until it wins (no timeout, no single attempt): the kit
bounds it by wait_ms as docs/driver-protocol.md says ("A library with no bounded or single-attempt
acquire"). Give the library a Counted client, then call bounded_acquire from do_acquire."""
import threading
import time

from .base import Indeterminate


class Counted:
    """A client that counts its commands in flight (busy) and those that failed (failed): at the
    deadline, a SET still in flight decides the answer, and one lost leaves it unknown."""

    def __init__(self, client):
        self.client, self.busy, self.failed = client, 0, 0

    def __getattr__(self, name):
        def call(*a, **kw):
            self.busy += 1
            try:
                return getattr(self.client, name)(*a, **kw)
            except Exception:
                self.failed += 1  # before busy drops: a reader of busy then sees it
                raise
            finally:
                self.busy -= 1
        return call


def bounded_acquire(acquire, release, counted, wait_ms, command_timeout):
    """Races acquire() (blocking until it wins, on a thread of its own) against wait_ms (0: its
    first attempt, given command_timeout seconds). True: won. At the deadline, a command still in
    flight is waited for (up to command_timeout): its answer decides. Still trying then: a lock it
    wins later is released at once (release()), and the answer is Indeterminate when a command was
    in flight or failed (the server may hold the key), False when every attempt was refused."""
    won = threading.Event()
    t = threading.Thread(target=lambda: (acquire(), won.set()), daemon=True)
    t.start()
    if won.wait(max(wait_ms / 1000, command_timeout)):
        return True
    end = time.monotonic() + command_timeout
    while counted.busy and time.monotonic() < end:
        time.sleep(0.001)
    if won.is_set():
        return True
    threading.Thread(target=lambda: (t.join(), won.is_set() and release()), daemon=True).start()
    if counted.busy or counted.failed:
        raise Indeterminate("wait_ms ended with a command in flight or failed")
    return False
