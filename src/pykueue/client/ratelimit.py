"""Client-side request rate limiting: client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``.

A bucket holds up to ``burst`` tokens and refills at ``qps`` per second; each request takes one,
waiting for it when the bucket is empty (``Wait``). Kueue sets ``qps``/``burst`` from its
Configuration's ``clientConnection`` (``ctrl.GetConfigOrDie`` then ``kubeConfig.QPS/Burst`` in
``cmd/kueue/main.go``); client-go uses no limiter when ``qps`` is not positive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """A thread-safe token bucket; :meth:`wait` takes one token, sleeping until one is there."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps: must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst: must be at least 1 when qps is set, got {burst}")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)  # client-go's bucket starts full
        self._last = clock()

    def reserve(self) -> float:
        """Take a token now (possibly a future one); the seconds to wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def wait(self) -> float:
        """Block until this caller's token is due; returns the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


def limiter_for(qps: float | None, burst: int | None) -> TokenBucket | None:
    """The limiter of a ``clientConnection`` (None, no limit, when ``qps`` is unset or not positive)."""
    if qps is None or qps <= 0:
        return None
    return TokenBucket(qps, max(1, burst or 1))
