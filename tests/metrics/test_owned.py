"""The owned (lock-free) counters and histograms scrape exactly as ``prometheus_client``'s own."""

from __future__ import annotations

import math
import random

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from pykueue.metrics.families import H16, HDEF, KueueMetrics
from pykueue.metrics.owned import OwnedCounter, OwnedHistogram

_SPECIAL = [0.0, -0.0, 1.0, 2.5, 5.0, 1e-9, -3.0, math.inf, -math.inf, math.nan, 1e300, 0.005, 10.0]


def _families(counter: type[Counter], histogram: type[Histogram]) -> tuple[CollectorRegistry, Counter, Histogram, Histogram]:
    r = CollectorRegistry()
    c = counter("kueue_x_total", "a counter\nwith two lines", ["cluster_queue", "replica_role"], registry=r)
    h = histogram("kueue_y_seconds", "a histogram", ["cluster_queue", "replica_role"], registry=r, buckets=H16)
    d = histogram("kueue_z_seconds", "default buckets", ["reason"], registry=r, buckets=HDEF)
    return r, c, h, d


@pytest.mark.parametrize("seed", range(20))
def test_random_operations_scrape_as_the_client_classes(seed: int) -> None:
    rng = random.Random(seed)
    want, wc, wh, wd = _families(Counter, Histogram)
    got, gc, gh, gd = _families(OwnedCounter, OwnedHistogram)
    queues = [f"cq-{i}" for i in range(5)]
    for step in range(400):
        op = rng.random()
        cq, role = rng.choice(queues), rng.choice(["standalone", "leader"])
        if op < 0.3:
            amount = rng.choice([1, 1, 2, 0.5, 0.1, 1e-3, 0])
            wc.labels(cq, role).inc(amount)
            gc.labels(cq, role).inc(amount)
        elif op < 0.75:
            value = rng.choice(_SPECIAL) if rng.random() < 0.3 else rng.expovariate(0.05)
            wh.labels(cq, role).observe(value)
            gh.labels(cq, role).observe(value)
        elif op < 0.9:
            value = rng.uniform(0, 12)
            wd.labels(cq).observe(value)
            gd.labels(cq).observe(value)
        elif op < 0.97:
            for want_fam, got_fam, labels in ((wc, gc, (cq, role)), (wh, gh, (cq, role)), (wd, gd, (cq,))):
                want_fam.remove(*labels)
                got_fam.remove(*labels)
        else:
            wc.labels(cq, role).reset()
            gc.labels(cq, role).reset()
        if step % 50 == 0:
            assert generate_latest(got) == generate_latest(want)
    assert generate_latest(got) == generate_latest(want)
    assert b"kueue_y_seconds_bucket" in generate_latest(got)


def test_the_client_checks_still_hold() -> None:
    _, c, h, _ = _families(OwnedCounter, OwnedHistogram)
    with pytest.raises(ValueError, match="missing label values"):
        c.inc()
    with pytest.raises(ValueError, match="missing label values"):
        h.observe(1.0)
    with pytest.raises(ValueError, match="non-negative"):
        c.labels("cq", "standalone").inc(-1)
    with pytest.raises(ValueError, match="exemplars"):
        h.labels("cq", "standalone").observe(1.0, {"trace_id": "a"})


def test_kueue_families_are_owned_and_scrape_what_was_counted() -> None:
    """The manager's families use the owned classes, and a scrape sees every count at once."""
    m = KueueMetrics()
    assert isinstance(m.admitted_workloads_total, OwnedCounter)
    assert isinstance(m.admission_wait_time, OwnedHistogram)
    for i in range(3):
        m.admitted("cq-a", "", 0.5 + i, 0.0, ["root"], ("lq", "ns"))
    text = m.exposition().decode()
    assert 'kueue_admitted_workloads_total{cluster_queue="cq-a",priority_class="",replica_role="standalone"} 3.0' in text
    assert 'kueue_admission_wait_time_seconds_bucket{cluster_queue="cq-a",le="1.0",priority_class="",replica_role="standalone"} 1.0' in text
    assert 'kueue_admission_wait_time_seconds_sum{cluster_queue="cq-a",priority_class="",replica_role="standalone"} 4.5' in text
    assert 'kueue_cohort_subtree_admitted_workloads_total{cohort="root",priority_class="",replica_role="standalone"} 3.0' in text
