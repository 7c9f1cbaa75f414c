"""For a library whose acquire blocks until it wins (no timeout, no single attempt): the kit
bounds it by wait_ms as docs/driver-protocol.md says ("A library with no bounded or single-attempt
acquire"). Give the library a Counted client, then call bounded_acquire from do_acquire."""
import threading
import time

from .base import Indeterminate


class Abandoned(BaseException):
    """Raised into an acquire that bounded_acquire gave up on, at its next command, so that it
    sends no more (a BaseException: a library's `except Exception` retry loop does not catch it)."""


class Counted:
    """A client that counts its commands that failed (failed: one lost leaves the acquire's outcome
    unknown). Once abandon(thread) was called, that thread's next command raises Abandoned
    unsent."""

    def __init__(self, client):
        self.client, self.failed, self.abandoned = client, 0, None

    def abandon(self, thread):
        self.abandoned = thread

    def __getattr__(self, name):
        def call(*a, **kw):
            if self.abandoned is threading.current_thread():
                time.sleep(0.01)  # a loop that catches even this one cannot spin
                raise Abandoned()
            try:
                return getattr(self.client, name)(*a, **kw)
            except Exception:
                self.failed += 1
                raise
        return call


def bounded_acquire(acquire, release, counted, wait_ms, command_timeout):
    """Races acquire() (blocking until it wins, on a thread of its own) against wait_ms (0: its
    first attempt, given command_timeout seconds). True: won. At the deadline the acquire is
    abandoned (its next command raises Abandoned unsent) and a command still in flight is waited
    for, up to command_timeout: its answer decides. A lock it wins after that is released at once
    (release()); the answer is then Indeterminate, as when a command failed (the server may hold
    the key), and False when every attempt was refused."""
    won = threading.Event()

    def run():
        try:
            acquire()
            won.set()
        except Abandoned:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    if won.wait(max(wait_ms / 1000, command_timeout)):
        return True
    counted.abandon(t)
    t.join(command_timeout)
    if won.is_set():
        return True
    if t.is_alive():  # a command still in flight: if it wins, give the key back
        threading.Thread(target=lambda: (t.join(), won.is_set() and release()), daemon=True).start()
        raise Indeterminate("wait_ms ended with a command in flight past the command timeout")
    if counted.failed:
        raise Indeterminate("wait_ms ended after a command failed (the server may hold the key)")
    return False
