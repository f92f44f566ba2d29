"""Counters and histograms written by one thread: ``prometheus_client``'s families, lock-free children.

``prometheus_client`` guards every child value with a mutex (``values.MutexValue``): a histogram
observation takes two locks and walks the buckets in Python, a counter increment one lock. Kueue's
counters and histograms are written only by the controller manager's thread (its writes'
completions, watch changes and scheduling cycles; :mod:`pykueue.metrics.recorder`), so the values
need no lock: a scrape on another thread reads plain floats, each read atomic under the GIL, as it
reads each locked value one at a time with the client's own classes. The families, their labels,
``labels()``/``remove()``, registration and the exposition stay the client's; only the child
storage (``_metric_init``, ``_child_samples``: the client's hooks for its metric types) and the
hot ``inc``/``observe`` differ. A scrape gives the same samples, in the same order, with the same
float values (the same additions in the same order) as the client's ``Counter``/``Histogram``:
``tests/metrics/test_owned.py`` compares the expositions. ``_created`` samples are not produced
(``pykueue.metrics.families`` disables them, as upstream exposes none); exemplars are not kept.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from prometheus_client import Counter, Histogram
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

_NO_EXEMPLARS = "exemplars are not kept by pykueue's owned metrics"


class OwnedCounter(Counter):
    """A :class:`prometheus_client.Counter` whose children are plain floats (one writer thread)."""

    def _metric_init(self) -> None:
        self._total = 0.0

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        """Increment by ``amount`` (the client's checks: a child, a non-negative amount)."""
        self._raise_if_not_observable()  # type: ignore[no-untyped-call]
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        if exemplar:
            raise ValueError(_NO_EXEMPLARS)
        self._total += amount

    def reset(self) -> None:
        """Reset to zero (``Counter.reset``)."""
        self._total = 0.0

    def _child_samples(self) -> Iterable[Sample]:
        return (Sample("_total", {}, self._total, None, None),)


class OwnedHistogram(Histogram):
    """A :class:`prometheus_client.Histogram` whose children keep plain float counts (one writer thread)."""

    def _metric_init(self) -> None:
        self._counts = [0.0] * len(self._upper_bounds)
        self._sum_value = 0.0

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        """Count ``amount`` in the first bucket whose bound is ≥ it (``Histogram.observe``'s walk,
        by bisection; a NaN is in no bucket, as none of the walk's comparisons holds for it)."""
        self._raise_if_not_observable()  # type: ignore[no-untyped-call]
        if exemplar:
            raise ValueError(_NO_EXEMPLARS)
        self._sum_value += amount
        if amount == amount:  # not NaN
            self._counts[bisect_left(self._upper_bounds, amount)] += 1

    def _child_samples(self) -> Iterable[Sample]:
        samples = []
        acc = 0.0
        for bound, count in zip(self._upper_bounds, list(self._counts), strict=True):
            acc += count
            le: str = floatToGoString(bound)  # type: ignore[no-untyped-call]
            samples.append(Sample("_bucket", {"le": le}, acc, None, None))
        samples.append(Sample("_count", {}, acc, None, None))
        if self._upper_bounds[0] >= 0:
            samples.append(Sample("_sum", {}, self._sum_value, None, None))
        return tuple(samples)
