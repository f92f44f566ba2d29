"""Partial admission search (upstream ``PodSetReducer``), mirroring upstream ``podset_reducer_test.go``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.core.scheduler.flavorassigner.podset_reducer import PodSetReducer, search_partial
from pykueue.core.workload.info import PodSetInfo


def ps(name: str, count: int, min_count: int | None = None) -> PodSetInfo:
    return PodSetInfo(name, count, min_count, {"cpu": 1000}, {"cpu": 1000 * count}, {})


EXAMPLE_F = [ps("ps1", 5, 3), ps("ps2", 5, 4), ps("ps3", 5, 1), ps("ps4", 5, 2)]


@pytest.mark.parametrize(
    ("name", "pod_sets", "limit", "want_count", "want_found"),
    [
        ("empty", [], 10, 0, False),
        ("partial not available", [ps("ps1", 1), ps("ps2", 2, 2)], 2, 0, False),
        ("partial available", EXAMPLE_F, 15, 15, True),
        ("one partial available", [ps("ps1", 5, 3), ps("ps2", 5), ps("ps3", 5), ps("ps4", 5)], 19, 19, True),
        ("to min", EXAMPLE_F, 10, 10, True),
        ("to max", EXAMPLE_F, 20, 20, True),
        ("no overflow", [ps(f"ps{i}", 150_000, 1) for i in range(1, 9)], 150_000, 150_000, True),
        (
            "max pods on 1.27",
            [ps("ps1", 150_000, 1), *(ps(f"ps{i}", 1) for i in range(2, 9))],
            150_000,
            150_000,
            True,
        ),
        ("podset with replica count 0", [ps("ps1", 0, 0)], 0, 0, False),
        ("not even the minimum fits", EXAMPLE_F, 9, 0, False),
    ],
)
def test_search(name: str, pod_sets: list[PodSetInfo], limit: int, want_count: int, want_found: bool) -> None:
    def accept(counts: list[int]) -> tuple[int, bool]:
        total = sum(counts)
        return total, total <= limit

    count, found = search_partial(pod_sets, accept)
    assert (count or 0, found) == (want_count, want_found)


def test_worked_example_f_probe_order() -> None:
    probes: list[tuple[int, ...]] = []

    def accept(counts: list[int]) -> tuple[list[int], bool]:
        probes.append(tuple(counts))
        return counts, sum(counts) <= 15

    result, found = search_partial(EXAMPLE_F, accept)
    reducer = PodSetReducer(EXAMPLE_F)
    assert [tuple(reducer.counts(k)) for k in (5, 8, 7, 6)] == probes
    assert probes[0] == (4, 5, 3, 4)  # k=5: 16 pods
    assert probes[3] == (4, 5, 3, 4)  # k=6: 16 pods
    assert found and result == [4, 5, 3, 3]  # k=7: 15 pods
    assert reducer.counts(7) == [4, 5, 3, 3]


def test_counts_formula() -> None:
    reducer = PodSetReducer(EXAMPLE_F)
    assert (reducer.deltas, reducer.total) == ([2, 1, 4, 3], 10)
    assert reducer.counts(0) == [5, 5, 5, 5]
    assert reducer.counts(10) == [3, 4, 1, 2]


def test_min_count_above_effective_count_gives_nothing_to_reduce() -> None:
    # Reclaimable pods may leave fewer pods than minCount; that pod set cannot shrink further.
    reducer = PodSetReducer([ps("a", 2, 3), ps("b", 4, 2)])
    assert reducer.deltas == [0, 2]
    assert reducer.counts(2) == [2, 2]


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=5),
    st.integers(0, 120),
)
def test_search_finds_smallest_accepted_index(shapes: list[tuple[int, int]], limit: int) -> None:
    pod_sets = [ps(f"p{i}", max(a, b), min(a, b)) for i, (a, b) in enumerate(shapes)]
    reducer = PodSetReducer(pod_sets)
    accepted = [k for k in range(reducer.total + 1) if sum(reducer.counts(k)) <= limit]
    result, found = search_partial(pod_sets, lambda c: (c, sum(c) <= limit))
    if reducer.total == 0 or not accepted:
        assert (result, found) == (None, False)
    else:
        assert found and result == reducer.counts(accepted[0])
    # Counts never increase with the index and stay within [min, count].
    for k in range(reducer.total):
        assert all(x >= y for x, y in zip(reducer.counts(k), reducer.counts(k + 1), strict=True))
    assert reducer.counts(reducer.total) == [p.min_count for p in pod_sets] or reducer.total == 0
