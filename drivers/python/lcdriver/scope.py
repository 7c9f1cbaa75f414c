"""Scoped idioms (docs/driver-protocol.md, "API modes"): a hold that lives
inside the library's own scope, `with lock:` or `async with lock:`, as the
application's code does. The acquire enters the scope on a thread (or a
task) of its own, which parks there while the lock is held; the release
wakes it, and the scope's own exit releases the lock: normally, or with an
exception raised inside (the throw extension), or with the shutdown's
(the sigterm extension)."""

import asyncio
import queue
import threading


class ApplicationError(Exception):
    """The application's error in its critical section (the throw fault)."""


class Shutdown(BaseException):
    """The process is shutting down (SIGTERM): raised inside the scopes so
    that they unwind as SystemExit unwinds a Python program's."""


class Exit:
    """How a scope ended: the exception its exit raised (None: it returned),
    and whether an exception came out of the scope to the application."""

    def __init__(self, error=None, raised=False):
        self.error = error
        self.raised = raised


class ThreadScope:
    """A sync scope on a thread of its own: `with cm:` parked until exit()."""

    def __init__(self, cm, on_enter=None):
        self.cm = cm
        # on_enter runs inside the scope, on its thread, as it is entered:
        # what only that thread can read (redis-py's thread-local token).
        self.on_enter = on_enter
        self.token = None
        self.entered = threading.Event()
        self.ended = threading.Event()
        self.leave = threading.Event()
        self.todo = queue.Queue()  # calls to run inside (call), and None: leave
        self.raise_inside = None  # an exception to raise inside, or None
        self.enter_error = None
        self.exit = None
        self.thread = threading.Thread(target=self.body, name="lock-scope", daemon=True)

    def body(self):
        inside = False
        try:
            with self.cm:
                inside = True
                if self.on_enter is not None:
                    self.token = self.on_enter()
                self.entered.set()
                for job in iter(self.todo.get, None):
                    job()
                if self.raise_inside is not None:
                    raise self.raise_inside
            self.exit = Exit()
        except BaseException as e:  # noqa: B036 (the scope's own exit, or the shutdown's)
            if not inside:
                self.enter_error = e
            else:
                self.exit = Exit(None if e is self.raise_inside else e, raised=True)
        finally:
            self.ended.set()

    def enter(self, bound):
        """Enters the scope; True once inside, False when entering raised
        (enter_error) — or the bound passed (then still running: abandon)."""
        self.thread.start()
        while not self.entered.is_set() and not self.ended.is_set():
            if not self.ended.wait(0.01) and bound():
                return None
        return self.entered.is_set()

    def call(self, fn, bound=None):
        """Runs fn inside the scope, on its thread (what the application's
        code in the block calls: an extend of a thread-local lock), and
        returns its result or raises its error."""
        box = {}
        done = threading.Event()

        def job():
            try:
                box["v"] = fn()
            except BaseException as e:  # noqa: B036
                box["e"] = e
            finally:
                done.set()
        self.todo.put(job)
        if not done.wait(bound):
            raise TimeoutError("the call inside the scope did not end in time")
        if "e" in box:
            raise box["e"]
        return box.get("v")

    def leave_with(self, exc=None, bound=None):
        """Leaves the scope (raising exc inside, if any) and waits for its exit."""
        self.raise_inside = exc
        self.leave.set()
        self.todo.put(None)
        self.ended.wait(bound)
        return self.exit


class TaskScope:
    """An asyncio scope: a task parked in `async with cm:` until exit. Its
    steps run on the lock's loop (BaseLock.run)."""

    def __init__(self, cm, loop):
        self.cm = cm
        self.loop = loop
        self.entered = loop.create_future()
        self.leave = loop.create_future()
        self.raise_inside = None
        self.exit = None
        self.task = None

    async def body(self):
        inside = False
        try:
            async with self.cm:
                inside = True
                self.entered.set_result(True)
                await self.leave
                if self.raise_inside is not None:
                    raise self.raise_inside
            self.exit = Exit()
        except BaseException as e:  # noqa: B036
            if not inside:
                raise
            self.exit = Exit(None if e is self.raise_inside else e, raised=True)
            if isinstance(e, asyncio.CancelledError):
                raise

    async def enter(self):
        """Starts the scope's task and waits until it is inside, or raises
        what entering raised. A cancel of this wait cancels the scope's task,
        as an application's request task is cancelled."""
        self.task = self.loop.create_task(self.body())
        try:
            await asyncio.wait({self.entered, self.task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self.task.cancel()
            await asyncio.wait({self.entered, self.task}, return_when=asyncio.FIRST_COMPLETED)
            if self.entered.done() and not self.task.done() and not self.leave.cancelled():
                # The library lost the cancel: on Python 3.11 asyncio.wait_for,
                # which redis-py's send uses under a socket timeout, returns the
                # result and drops a cancel that lands as its future completes
                # (CPython gh-86296, fixed in 3.12). The task goes on inside its
                # `async with`, as an application's would; waiting for its end
                # hung the acquire (a CI rehearsal: unanswered for 5.6 s).
                return True
            # The cancel reached the scope's task, in its entry or parked inside
            # (entered as this wait was cancelled: its wait for leave is
            # cancelled, and its exit releases). Answering entered then was a
            # hold that was not (a CI run: its release raised the exit's
            # CancelledError): the entry ends with the scope.
            await asyncio.wait({self.task})
            raise
        if not self.entered.done():
            self.task.result()  # raises the enter's error
        return True

    async def leave_with(self, exc=None):
        """Leaves the scope (raising exc inside, if any) and waits for its
        exit; a cancel of this wait cancels the scope's task in its exit."""
        self.raise_inside = exc
        if not self.leave.done():
            self.leave.set_result(None)
        try:
            await asyncio.wait({self.task})
        except asyncio.CancelledError:
            self.task.cancel()
            await asyncio.wait({self.task})
            raise
        if self.task.cancelled() and self.exit is None:
            raise asyncio.CancelledError()
        return self.exit
