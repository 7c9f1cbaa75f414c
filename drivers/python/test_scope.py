"""TaskScope (the asyncio scoped idiom) answers a cancelled entry as the application's task
ends up: cancelled when the cancel reached the scope, entered when the library lost it. No
server: the scope's context manager is a fake whose entry waits on a future the test sets."""

import asyncio

from lcdriver.scope import TaskScope


class FakeLock:
    """An `async with` whose entry waits for gate; swallow: it drops a cancel that lands
    there, as Python 3.11's asyncio.wait_for does when its future completes with it."""

    def __init__(self, gate, swallow=False):
        self.gate = gate
        self.swallow = swallow
        self.exits = []

    async def __aenter__(self):
        try:
            await self.gate
        except asyncio.CancelledError:
            if not self.swallow:
                raise
        return self

    async def __aexit__(self, typ, exc, tb):
        await asyncio.sleep(0.01)  # the release's round trip
        self.exits.append(typ)
        return False


async def steps(n):
    for _ in range(n):
        await asyncio.sleep(0)


def test_cancel_as_the_scope_is_entered_ends_the_scope():
    # The acquire's wait is cancelled in the loop step in which the scope's task gets inside:
    # the scope sees the cancel and its exit releases, so the acquire is cancelled, not entered.
    async def main():
        loop = asyncio.get_running_loop()
        lock = FakeLock(loop.create_future())
        sc = TaskScope(lock, loop)
        acquire = loop.create_task(sc.enter())
        await steps(2)  # the acquire waits; the scope's task waits in its entry
        lock.gate.set_result(None)  # the scope's task is woken first ...
        loop.call_soon(acquire.cancel)  # ... then, before the acquire's wait hears of it, the cancel
        try:
            got = await acquire
        except asyncio.CancelledError:
            got = "cancelled"
        return got, lock.exits, sc.task.done()

    got, exits, done = asyncio.run(main())
    assert (got, exits, done) == ("cancelled", [asyncio.CancelledError], True)


def test_cancel_the_library_lost_answers_entered():
    # The library drops the cancel in its entry: the task goes on inside, parked, and the
    # acquire answers entered (waiting for the task's end would hang), then leaves normally.
    async def main():
        loop = asyncio.get_running_loop()
        lock = FakeLock(loop.create_future(), swallow=True)
        sc = TaskScope(lock, loop)
        acquire = loop.create_task(sc.enter())
        await steps(2)
        acquire.cancel()
        got = await asyncio.wait_for(acquire, 2)
        inside = (list(lock.exits), sc.task.done())
        ex = await asyncio.wait_for(sc.leave_with(), 2)
        return got, inside, ex.error, lock.exits

    got, inside, err, exits = asyncio.run(main())
    assert (got, inside, err, exits) == (True, ([], False), None, [None])
