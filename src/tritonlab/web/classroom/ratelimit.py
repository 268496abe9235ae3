"""A sliding-window rate limit per key (a client address): at most `count` events in `window_s` seconds.

Bounded memory: at most `keys` keys are remembered, the least recently seen forgotten first (a forgotten key
starts afresh: an address that rotates through more than `keys` others only resets its own windows sooner).
"""

from __future__ import annotations

import collections
import threading
import time


class PerKey:
    def __init__(self, count: int, window_s: float, keys: int = 4096) -> None:
        self.count, self.window_s, self.keys = count, window_s, keys
        self._seen: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def hit(self, key: str) -> float:
        """Count one event for `key`: 0.0 when allowed, else the seconds until the next one is (not counted)."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.pop(key, None) or collections.deque()
            while seen and now - seen[0] >= self.window_s:
                seen.popleft()
            self._seen[key] = seen
            while len(self._seen) > self.keys:
                self._seen.popitem(last=False)
            if len(seen) >= self.count:
                return max(0.001, self.window_s - (now - seen[0]))
            seen.append(now)
            return 0.0
