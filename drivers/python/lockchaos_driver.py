#!/usr/bin/env python3
"""A lockchaos driver for Python lock libraries (docs/driver-protocol.md).

    python3 lockchaos_driver.py LOCK      LOCK: redis-py, redis-py-asyncio, python-redis-lock, pottery-redlock

The protocol is the kit's (lcdriver.serve); each lock is a file of lcdriver.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lcdriver import LOCKS, serve  # noqa: E402


def main(argv):
    if len(argv) != 2 or argv[1] not in LOCKS:
        print(f"usage: {argv[0]} LOCK  (LOCK: {', '.join(sorted(LOCKS))})", file=sys.stderr)
        return 2
    serve(LOCKS[argv[1]]())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
