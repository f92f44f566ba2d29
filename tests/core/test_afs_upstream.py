"""Admission Fair Sharing accounting, ported from upstream Kueue's tables:
``pkg/cache/queue/afs/entry_penalties_test.go``, ``pkg/cache/queue/afs/usage_ledger_test.go`` and
``pkg/util/admissionfairsharing/admission_fair_sharing_test.go`` (case names verbatim).

Rules ported (upstream code is the authority):

- ``CalculateUsage``: a LocalQueue's usage is ``sum(weight[r] * (consumed[r] + pendingPenalty[r]))
  / lqWeight`` over resources in sorted order, a resource without a configured weight weighing 1;
  a non-positive LocalQueue weight gives +Inf (never NaN), so that queue sorts last.
- ``calculateAlphaRate(sampling, halfLife) = 1 - 0.5^(sampling/halfLife)`` (0 for a zero half-life);
  ``CalculateDecayedConsumed(old, new) = old*(1-alpha) + new*alpha`` with alpha for the elapsed time;
  ``CalculateEntryPenalty(requests) = requests * alpha(usageSamplingInterval)``.
- ``MulByFloat`` multiplies exactly and rounds toward zero to nine decimals, so sub-milli samples
  accumulate and repeated decay reaches zero.
- Entry penalties are recorded per Workload in the LocalQueue's ledger entry: re-pushing replaces,
  subtracting removes exactly the record, subtracting without a record is a no-op that creates no
  entry; the first push stamps ``LastUpdate`` and leaves ``StatusAccounted`` false.
- ``Update`` passes the current entry (or an empty one and ``found=False``) and stores the result.

Not ported: ``TestResolveLQWeight`` "other error" — pykueue's core reads LocalQueues from its own
state, there is no API read that can fail; the other three cases are ported against
``lq_weight_as_float``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import pytest

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.kueue import FairSharing, LocalQueue, LocalQueueSpec, ObjectMeta
from pykueue.api.quantity import parse_quantity
from pykueue.core.queue.afs import (
    AfsUsageLedger,
    UsageLedgerEntry,
    calculate_decayed_consumed,
    calculate_entry_penalty,
    calculate_usage,
    lq_weight_as_float,
    mul_by_float,
)

LQ = "ns/lq"
NOW = 1_700_000_000.0


def q(text: str) -> Fraction:
    return parse_quantity(text).value


def milli(v: Fraction) -> int:
    """``Quantity.MilliValue`` (rounds up)."""
    return math.ceil(v * 1000)


# --- entry_penalties_test.go -------------------------------------------------------------------

Op = tuple[str, dict[str, Fraction] | None]  # (workload, push; None means SubPenalty)

PENALTY_CASES: list[tuple[str, list[Op], bool, dict[str, int]]] = [
    (
        "pushes for distinct workloads accumulate",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl2", {"cpu": q("3")})],
        True,
        {"cpu": 5_000},
    ),
    (
        "re-pushing the same workload replaces instead of stacking",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl1", {"cpu": q("2")})],
        True,
        {"cpu": 2_000},
    ),
    (
        "re-pushing with a different amount keeps the latest",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl1", {"cpu": q("3")})],
        True,
        {"cpu": 3_000},
    ),
    (
        "rollback after replacement subtracts the replacement amount",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl1", {"cpu": q("3")}), ("ns/wl1", None)],
        False,
        {},
    ),
    (
        "subtracting a workload removes exactly its record",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl2", {"cpu": q("3")}), ("ns/wl1", None)],
        True,
        {"cpu": 3_000},
    ),
    (
        "subtracting the only workload leaves nothing pending",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl1", None)],
        False,
        {},
    ),
    (
        "subtracting twice is a no-op the second time",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl2", {"cpu": q("3")}), ("ns/wl1", None), ("ns/wl1", None)],
        True,
        {"cpu": 3_000},
    ),
    ("subtracting a workload that never pushed leaves no negative residue", [("ns/wl1", None)], False, {}),
    (
        "a workload's subtraction cannot drain another workload's resources",
        [("ns/wl1", {"cpu": q("2")}), ("ns/wl2", {"memory": q("4Gi")}), ("ns/wl1", None)],
        True,
        {"cpu": 0, "memory": 4 * 1024 * 1024 * 1024 * 1000},
    ),
]


@pytest.mark.parametrize(
    ("name", "ops", "want_has", "want_milli"), PENALTY_CASES, ids=[c[0] for c in PENALTY_CASES]
)
def test_penalty_bookkeeping_is_idempotent_and_exact(
    name: str, ops: list[Op], want_has: bool, want_milli: dict[str, int]
) -> None:
    ledger = AfsUsageLedger()
    for wl, push in ops:
        if push is not None:
            ledger.push_penalty(LQ, wl, push, NOW)
        else:
            ledger.sub_penalty(LQ, wl)
    assert ledger.has_pending_penalty(LQ) is want_has, ledger.peek_penalty(LQ)
    for res, want in want_milli.items():
        assert milli(ledger.peek_penalty(LQ).get(res, Fraction(0))) == want


def test_push_penalty_seeds_last_update_only_when_creating() -> None:
    ledger = AfsUsageLedger()
    ledger.push_penalty(LQ, "ns/wl1", {"cpu": q("1")}, NOW)
    entry = ledger.get(LQ)
    assert entry is not None
    assert entry.last_update == NOW
    assert not entry.status_accounted
    ledger.push_penalty(LQ, "ns/wl2", {"cpu": q("1")}, NOW + 3600)
    entry = ledger.get(LQ)
    assert entry is not None
    assert entry.last_update == NOW
    assert milli(entry.pending_penalty["cpu"]) == 2_000


def test_sub_penalty_does_not_create_entry() -> None:
    ledger = AfsUsageLedger()
    assert ledger.sub_penalty(LQ, "ns/wl1") is None
    assert ledger.get(LQ) is None
    ledger.push_penalty(LQ, "ns/other", {"cpu": q("2")}, NOW)
    ledger.sub_penalty(LQ, "ns/wl1")
    assert milli(ledger.peek_penalty(LQ)["cpu"]) == 2_000


# --- usage_ledger_test.go ----------------------------------------------------------------------

SETTLE = NOW
SEED = NOW + 0.001
SEEDED = {"cpu": q("8")}
SETTLED = {"cpu": q("2")}


def _seed_fn(entry: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
    if not found:
        return UsageLedgerEntry(resources=SEEDED, last_update=SEED, status_accounted=True)
    return entry


def _writer_fn(entry: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
    return UsageLedgerEntry(resources=SETTLED, last_update=SETTLE, status_accounted=entry.status_accounted)


UPDATE_CASES = [
    (
        "passes found=false and a zero entry when absent, stores the result",
        None,
        _seed_fn,
        UsageLedgerEntry(resources=SEEDED, last_update=SEED, status_accounted=True),
    ),
    (
        "passes the current entry when present",
        UsageLedgerEntry(resources=SETTLED, last_update=SETTLE),
        _seed_fn,
        UsageLedgerEntry(resources=SETTLED, last_update=SETTLE),
    ),
    (
        "a writer-style update preserves StatusAccounted",
        UsageLedgerEntry(resources=SEEDED, last_update=SEED, status_accounted=True),
        _writer_fn,
        UsageLedgerEntry(resources=SETTLED, last_update=SETTLE, status_accounted=True),
    ),
]


@pytest.mark.parametrize(("name", "existing", "fn", "want"), UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_update(name: str, existing: UsageLedgerEntry | None, fn: object, want: UsageLedgerEntry) -> None:
    ledger = AfsUsageLedger()
    if existing is not None:
        ledger.update(LQ, lambda _e, _f: existing)
    assert callable(fn)
    got = ledger.update(LQ, fn)
    assert got == want
    assert ledger.get(LQ) == want


def test_entry_penalty_aggregate_matches_records() -> None:
    entry = UsageLedgerEntry()
    entry = entry.with_penalty("ns/wl1", {"cpu": q("2")})
    entry = entry.with_penalty("ns/wl2", {"cpu": q("3")})
    entry = entry.with_penalty("ns/wl1", {"cpu": q("4")})
    entry, removed = entry.without_penalty("ns/wl2")
    assert removed is not None
    assert milli(removed["cpu"]) == 3_000
    total = sum((p.get("cpu", Fraction(0)) for p in entry.penalty_records.values()), Fraction(0))
    assert entry.pending_penalty["cpu"] == total
    assert milli(entry.pending_penalty["cpu"]) == 4_000


def test_entry_penalty_helpers_do_not_mutate_shared_maps() -> None:
    ledger = AfsUsageLedger()
    ledger.push_penalty(LQ, "ns/wl1", {"cpu": q("2")}, NOW)
    snapshot = ledger.get(LQ)
    assert snapshot is not None
    ledger.push_penalty(LQ, "ns/wl2", {"cpu": q("3")}, NOW)
    ledger.sub_penalty(LQ, "ns/wl1")
    assert milli(snapshot.pending_penalty["cpu"]) == 2_000
    assert snapshot.has_penalty_record("ns/wl1")
    assert not snapshot.has_penalty_record("ns/wl2")


# --- admission_fair_sharing_test.go ------------------------------------------------------------


def _lq(weight: str | None) -> LocalQueue:
    spec = LocalQueueSpec(cluster_queue="cq", fair_sharing=FairSharing(weight=weight) if weight else None)
    return LocalQueue(metadata=ObjectMeta(name="lq", namespace="ns"), spec=spec)


@pytest.mark.parametrize(
    ("lq", "want"),
    [(_lq("2"), 2.0), (_lq(None), 1.0), (None, 1.0)],
    ids=["configured weight", "default weight", "missing LocalQueue"],
)
def test_resolve_lq_weight(lq: LocalQueue | None, want: float) -> None:
    assert lq_weight_as_float(lq) == want


def _afs(sampling: str, half_life: str) -> AdmissionFairSharingConfig:
    return AdmissionFairSharingConfig(
        usage_sampling_interval=Duration.parse(sampling), usage_half_life_time=Duration.parse(half_life)
    )


def test_calculate_entry_penalty_with_dra_resources() -> None:
    penalty = calculate_entry_penalty({"cpu": q("4"), "gpu-logical": q("2")}, _afs("5m", "10m"))
    assert penalty["cpu"] > 0
    assert penalty["gpu-logical"] > 0


def test_calculate_entry_penalty_with_long_half_life() -> None:
    penalty = calculate_entry_penalty({"cpu": q("2"), "nvidia.com/gpu": q("1")}, _afs("5m", "168h"))
    assert penalty["cpu"] > 0
    assert penalty["nvidia.com/gpu"] > 0


LONG_HALF_LIFE = 168 * 3600.0
SAMPLING_ELAPSED = 300.0


def test_calculate_decayed_consumed_accumulates_sub_milli() -> None:
    usage = {"cpu": q("2"), "nvidia.com/gpu": q("1")}
    consumed: Mapping[str, Fraction] = {}
    prev_cpu, prev_gpu = Fraction(0), Fraction(0)
    for _ in range(3):
        consumed = calculate_decayed_consumed(consumed, usage, SAMPLING_ELAPSED, LONG_HALF_LIFE)
        assert consumed["cpu"] > prev_cpu
        assert consumed["nvidia.com/gpu"] > prev_gpu
        prev_cpu, prev_gpu = consumed["cpu"], consumed["nvidia.com/gpu"]


def test_calculate_decayed_consumed_converges_to_usage() -> None:
    usage = {"cpu": q("2")}
    consumed: Mapping[str, Fraction] = {}
    want_after = {1: q("1"), 2: q("1500m"), 3: q("1750m")}
    for half_lives in (1, 2, 3):
        for _ in range(2016):
            consumed = calculate_decayed_consumed(consumed, usage, SAMPLING_ELAPSED, LONG_HALF_LIFE)
        got = consumed["cpu"]
        assert want_after[half_lives] - q("1m") <= got <= want_after[half_lives] + q("1m")
        assert got <= usage["cpu"]


@pytest.mark.parametrize("size", ["16Gi", "1Ti", "64Ti"])
def test_calculate_decayed_consumed_keeps_large_quantities_positive(size: str) -> None:
    consumed = calculate_decayed_consumed({}, {"memory": q(size)}, SAMPLING_ELAPSED, LONG_HALF_LIFE)
    assert consumed["memory"] > 0


USAGE_CASES: list[tuple[str, dict[str, Fraction], dict[str, Fraction], float, dict[str, float], float]] = [
    ("DRA resource with default weight", {"gpu-logical": q("2")}, {}, 1, {}, 2),
    ("DRA resource with explicit weight", {"gpu-logical": q("2")}, {}, 1, {"gpu-logical": 3.0}, 6),
    (
        "mixed CPU and DRA resources",
        {"cpu": q("4"), "gpu-logical": q("2")},
        {},
        1,
        {"cpu": 1.0, "gpu-logical": 5.0},
        14,
    ),
    (
        "DRA resource with weight zero contributes nothing",
        {"gpu-logical": q("10")},
        {},
        1,
        {"gpu-logical": 0},
        0,
    ),
    ("DRA resource in penalty only", {}, {"gpu-logical": q("3")}, 1, {}, 3),
    (
        "DRA resource in both consumed and penalty",
        {"gpu-logical": q("2")},
        {"gpu-logical": q("1")},
        2,
        {"gpu-logical": 4.0},
        6,
    ),
]


@pytest.mark.parametrize(
    ("name", "consumed", "penalty", "lq_weight", "res_weights", "want"),
    USAGE_CASES,
    ids=[c[0] for c in USAGE_CASES],
)
def test_calculate_usage_with_dra(
    name: str,
    consumed: dict[str, Fraction],
    penalty: dict[str, Fraction],
    lq_weight: float,
    res_weights: dict[str, float],
    want: float,
) -> None:
    assert calculate_usage(consumed, penalty, lq_weight, res_weights) == want


@pytest.mark.parametrize(
    ("consumed", "lq_weight"),
    [({}, 0.0), ({"cpu": q("4")}, 0.0), ({"cpu": q("4")}, -1.0)],
    ids=["zero weight, idle queue (no usage)", "zero weight, active queue", "negative weight"],
)
def test_calculate_usage_with_non_positive_weight(consumed: dict[str, Fraction], lq_weight: float) -> None:
    got = calculate_usage(consumed, {}, lq_weight, {})
    assert not math.isnan(got)
    assert got == math.inf


@pytest.mark.parametrize(
    ("consumed", "weight", "want"),
    [
        ({"cpu": q("3n")}, 1.0, 3 * 1e-9),  # 3.0000000000000004e-09, Go's float64(3) * 1e-9
        ({"cpu": q("15")}, 1.0, 15_000_000_000 * 1e-9),  # scale nine: 15.000000000000002
    ],
)
def test_calculate_usage_reads_amounts_as_approximate_float64(
    consumed: dict[str, Fraction], weight: float, want: float
) -> None:
    """``CalculateUsage`` sums ``Quantity.AsApproximateFloat64`` of scale-nine decimals (what
    ``MulByFloat`` leaves), which is not the correctly rounded value."""
    assert calculate_usage(consumed, None, weight, {}) == want


@pytest.mark.parametrize(("weight", "want"), [("0.7", 700 * 0.001), ("2.3", 2300 * 0.001), ("2", 2.0), ("1k", 1000.0)])
def test_lq_weight_as_approximate_float64_of_the_stored_form(weight: str, want: float) -> None:
    """``LQWeightAsFloat64`` of a weight as the API server stores it (canonical ``700m``)."""
    lq = LocalQueue(metadata=ObjectMeta(name="lq", namespace="ns"), spec=LocalQueueSpec(fair_sharing=FairSharing(weight=weight)))
    assert lq_weight_as_float(lq) == want


# --- pkg/util/resource/resource_test.go (MulByFloat) -------------------------------------------

LONG_HALF_LIFE_DECAY_FACTOR = 0.00034376390587387284

MUL_BY_FLOAT_CASES: dict[str, tuple[dict[str, Fraction] | None, float, dict[str, Fraction] | None]] = {
    "large quantity does not overflow": (
        {"memory": q("64Ti")},
        LONG_HALF_LIFE_DECAY_FACTOR,
        {"memory": q("24190234349953124739n")},
    ),
    "sub-milli results are preserved for every resource": (
        {"cpu": q("2"), "memory": q("16Gi"), "nvidia.com/gpu": q("1")},
        LONG_HALF_LIFE_DECAY_FACTOR,
        {"cpu": q("687527n"), "memory": q("5905818933094024n"), "nvidia.com/gpu": q("343763n")},
    ),
    "scaling by one is lossless": ({"cpu": q("1500m")}, 1, {"cpu": q("1500m")}),
    "nil list stays nil": (None, 0.5, None),
    "empty list stays empty": ({}, 0.5, {}),
    "scaling by zero": ({"cpu": q("2")}, 0, {"cpu": q("0")}),
}


@pytest.mark.parametrize(("rl", "f", "want"), MUL_BY_FLOAT_CASES.values(), ids=list(MUL_BY_FLOAT_CASES))
def test_mul_by_float(rl: dict[str, Fraction] | None, f: float, want: dict[str, Fraction] | None) -> None:
    got = mul_by_float(rl, f)
    # pykueue returns an empty list for upstream's nil; both have no amounts.
    assert got == (want or {})


@pytest.mark.parametrize(
    "factor", [1 - LONG_HALF_LIFE_DECAY_FACTOR, 0.94387431268169349], ids=["168h half-life", "1h half-life"]
)
def test_mul_by_float_decays_to_zero(factor: float) -> None:
    """``TestMulByFloatDecaysToZero``: rounding toward zero, repeated decay reaches zero (rounding
    to nearest would settle on a non-zero fixed point)."""
    rl = {"cpu": q("2")}
    for _ in range(200_000):
        rl = mul_by_float(rl, factor)
        if rl["cpu"] == 0:
            return
    pytest.fail(f"residual usage {rl['cpu']}")
