"""The Python driver locks, by the name lockchaos knows them by."""

from .pottery_redlock import PotteryRedlock
from .pyredislock import PyRedisLock
from .redispy import RedisPyLock
from .redispy_asyncio import RedisPyAsyncioLock

LOCKS = {c.name: c for c in (RedisPyLock, RedisPyAsyncioLock, PyRedisLock, PotteryRedlock)}
