"""redis-py's asyncio Lock (redis.asyncio.lock.Lock): the sync Lock's protocol
(SET NX PX, Lua compare-and-delete and extend) on asyncio clients. Unlike the
sync Lock, its release keeps the token when the call fails other than by not
owning. The worker thread runs one event loop; each library call is one
run_until_complete (inside the times t0, t1), as a task: the cancel
extension cancels it (task.cancel(), as an application's timeout or a
caller gone does), and the library's call sees CancelledError wherever it
awaits."""

import asyncio
import threading

from .base import Cancelled, clients, log
from .redispy import RedisPyLock
from .scope import TaskScope


class RedisPyAsyncioLock(RedisPyLock):
    name = "redis-py-asyncio"
    cancellable = True
    # `async with r.lock(name, …):` first; acquire()/release() in a finally second.
    apis = ["async-with", "acquire"]

    def connect(self):
        import redis.asyncio.lock
        import redis.exceptions

        self.Lock = redis.asyncio.lock.Lock
        # The server's refusal. A plain LockError is the Lock's own (it holds no token, e.g. a release
        # retried after one that timed out: the sync Lock forgets its token first): not the server's.
        self.refusals = (redis.exceptions.LockNotOwnedError,)
        self.enter_refusals = (redis.exceptions.LockError,)  # `async with` that gave up its wait
        self.loop = asyncio.new_event_loop()
        self.clients = clients(self, asyncio=True)[:1]  # one key per lock: with independent masters, the first
        client = self.clients[0]
        try:
            self.run(client.ping())
        except Exception as e:
            log(f"init: PING failed: {type(e).__name__}: {e}")
        self.options_from_extra()

    def run(self, coro):
        with self.task_mu:
            task = self.loop.create_task(coro)
            self.task = task
            if self.cancel_pending:
                task.cancel()
        try:
            return self.loop.run_until_complete(task)
        except asyncio.CancelledError:
            raise Cancelled("CancelledError: the task was cancelled (task.cancel())") from None
        finally:
            with self.task_mu:
                self.task = None

    # The cancel extension. cancel_call runs on the stdin thread: the task
    # in the loop is cancelled from the loop's thread (call_soon_threadsafe);
    # between two run()s of one request, the next one starts cancelled.
    task = None
    cancel_pending = False
    task_mu = threading.Lock()

    def cancel_call(self):
        with self.task_mu:
            self.cancel_pending = True
            if self.task is not None:
                self.loop.call_soon_threadsafe(self.task.cancel)

    def cancel_reset(self, pending):
        with self.task_mu:
            self.cancel_pending = pending

    # The scoped idiom: a task parked in `async with lock:` (TaskScope) on
    # the loop; each step runs as a call (run), so the cancel extension
    # cancels the scope's task in its entry or its exit.
    def enter_scope(self, cm, wait_ms, token):
        sc = TaskScope(cm, self.loop)
        self.run(sc.enter())
        return sc, True

    def leave_scope(self, sc, exc):
        return self.run(sc.leave_with(exc))

    def do_acquire(self, lock, ttl_ms, wait_ms):
        return self.run(lock.acquire(**self.wait_args(wait_ms)))

    def do_release(self, lock):
        self.run(lock.release())

    def do_extend(self, lock, ttl_ms):
        self.run(lock.extend(ttl_ms / 1000.0, replace_ttl=True))

    def close(self):
        for c in self.clients:
            try:
                self.run(c.aclose())
            except Exception:
                pass

    def reset(self):
        r = super().reset()
        if r["type"] == "reset_ok":
            self.loop.close()  # connect makes the next run's loop
        return r
