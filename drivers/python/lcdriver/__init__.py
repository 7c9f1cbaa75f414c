"""lockchaos's Python driver kit (pip install ./drivers/python): BaseLock and
its helpers (lcdriver.base) for a lock's calls, serve (lcdriver.serve) for the
protocol, and the shipped driver locks by the name lockchaos knows them by."""

from .base import BaseLock, Indeterminate, Unsupported, clients, log, now, parse_bool, ping_all
from .pottery_redlock import PotteryRedlock
from .pyredislock import PyRedisLock
from .redispy import RedisPyLock
from .redispy_asyncio import RedisPyAsyncioLock
from .serve import serve
from .unbounded import Counted, bounded_acquire

LOCKS = {c.name: c for c in (RedisPyLock, RedisPyAsyncioLock, PyRedisLock, PotteryRedlock)}

__all__ = ["BaseLock", "Indeterminate", "Unsupported", "clients", "log", "now", "parse_bool", "ping_all", "serve", "Counted", "bounded_acquire", "LOCKS"]
