"""Tests for the keyed binary heap (``pykueue.core.queue.heap``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.core.queue import KeyedHeap


def make_heap(values: dict[str, int] | None = None) -> tuple[KeyedHeap[str, list[int]], dict[str, list[int]]]:
    """A heap of mutable one-element lists ordered by their value (so ``fix`` can be tested)."""
    items = {k: [v] for k, v in (values or {}).items()}
    heap: KeyedHeap[str, list[int]] = KeyedHeap(lambda item: item[0])
    for k, item in items.items():
        heap.push_if_absent(k, item)
    return heap, items


def drain(heap: KeyedHeap[str, list[int]]) -> list[str]:
    out = []
    while (popped := heap.pop()) is not None:
        out.append(popped[0])
    return out


def test_pops_in_order() -> None:
    heap, _ = make_heap({"c": 3, "a": 1, "b": 2, "d": 0})
    assert len(heap) == 4
    assert drain(heap) == ["d", "a", "b", "c"]
    assert heap.pop() is None
    assert not heap


@pytest.mark.parametrize(
    ("name", "op", "want"),
    [
        ("update moves an item up", lambda h: h.push_or_update("c", [-1]), ["c", "a", "b"]),
        ("update moves an item down", lambda h: h.push_or_update("a", [9]), ["b", "c", "a"]),
        ("update of absent key inserts", lambda h: h.push_or_update("z", [0]), ["z", "a", "b", "c"]),
        ("remove head", lambda h: h.remove("a"), ["b", "c"]),
        ("remove middle", lambda h: h.remove("b"), ["a", "c"]),
        ("remove absent", lambda h: h.remove("zz"), ["a", "b", "c"]),
        ("push existing is refused", lambda h: h.push_if_absent("a", [100]), ["a", "b", "c"]),
    ],
)
def test_keyed_operations(name: str, op: object, want: list[str]) -> None:
    heap, _ = make_heap({"a": 1, "b": 2, "c": 3})
    op(heap)  # type: ignore[operator]
    assert drain(heap) == want, name


def test_get_contains_peek() -> None:
    heap, items = make_heap({"a": 5, "b": 1})
    assert "a" in heap and "x" not in heap
    assert heap.get("a") is items["a"]
    assert heap.get("x") is None
    assert heap.peek() is items["b"]
    assert sorted(heap.keys()) == ["a", "b"]
    assert heap.sorted_items() == [[1], [5]]


def test_fix_after_external_change() -> None:
    heap, items = make_heap({"a": 1, "b": 2, "c": 3})
    items["c"][0] = 0
    heap.fix("c")
    items["a"][0] = 10
    heap.fix("a")
    heap.fix("missing")
    assert drain(heap) == ["c", "b", "a"]


def test_rebuild_after_every_order_changed() -> None:
    heap, items = make_heap({k: i for i, k in enumerate("abcdefgh")})
    for item in items.values():
        item[0] = -item[0]
    heap.rebuild()
    assert drain(heap) == list("hgfedcba")


ops = st.lists(
    st.tuples(
        st.sampled_from(["push", "update", "remove", "pop", "fix"]),
        st.integers(min_value=0, max_value=30),
        st.integers(min_value=-50, max_value=50),
    ),
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_matches_sorted_model(operations: list[tuple[str, int, int]]) -> None:
    """Under random push/update/remove/pop/fix the heap behaves like a sorted dict."""
    heap: KeyedHeap[int, list[int]] = KeyedHeap(lambda item: (item[0], item[1]))
    model: dict[int, list[int]] = {}
    for op, key, value in operations:
        if op == "push":
            item = [value, key]
            assert heap.push_if_absent(key, item) == (key not in model)
            model.setdefault(key, item)
        elif op == "update":
            item = [value, key]
            heap.push_or_update(key, item)
            model[key] = item
        elif op == "remove":
            assert heap.remove(key) == model.pop(key, None)
        elif op == "fix" and key in model:
            model[key][0] = value
            heap.fix(key)
        elif op == "pop":
            want = min(model.items(), key=lambda kv: (kv[1][0], kv[1][1]), default=None)
            got = heap.pop()
            assert got == want
            if want is not None:
                del model[want[0]]
        assert len(heap) == len(model)
    assert [k for k, _ in iter(heap.pop, None)] == sorted(model, key=lambda k: (model[k][0], k))


@settings(max_examples=200, deadline=None)
@given(
    values=st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=3), st.integers(0, 50), max_size=60),
    removed=st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=3), max_size=60),
    pushed=st.dictionaries(st.text(alphabet="ijk", min_size=1, max_size=2), st.integers(0, 50), max_size=5),
)
def test_remove_many_equals_single_removals(
    values: dict[str, int], removed: list[str], pushed: dict[str, int]
) -> None:
    """``remove_many`` (single sifts for a few keys, filter + heapify for many) leaves the same heap
    contents, index and pop order (ties broken by key, a total order as the queues use) as removing
    one key at a time, also for pushes after it."""
    removed = list(dict.fromkeys(removed))
    order = lambda item: (item[0], item[1])  # noqa: E731 - (value, key): total
    one: KeyedHeap[str, tuple[int, str]] = KeyedHeap(order)
    many: KeyedHeap[str, tuple[int, str]] = KeyedHeap(order)
    for k, v in values.items():
        one.push_if_absent(k, (v, k))
        many.push_if_absent(k, (v, k))
    want = [(k, item) for k in removed if (item := one.remove(k)) is not None]
    assert many.remove_many(removed) == want
    assert len(many) == len(one)
    for k in values:
        assert many.get(k) == one.get(k)
    for k, v in pushed.items():
        one.push_or_update(k, (v, k))
        many.push_or_update(k, (v, k))
    assert [many.pop() for _ in range(len(many) + 1)] == [one.pop() for _ in range(len(one) + 1)]


def test_lazy_deletion_compacts_in_place_and_keeps_the_order() -> None:
    """Removed and updated entries stay in the list until they surface or exceed a quarter of the live ones;
    the compaction filters the same list object (it may be gc-frozen) and the pops stay in order."""
    heap, _ = make_heap({f"k{i:03d}": i for i in range(200)})
    entries = heap._entries
    for i in range(200):
        if i % 4:
            heap.remove(f"k{i:03d}")
    for i in range(0, 40, 4):
        heap.push_or_update(f"k{i:03d}", [1000 - i])
    assert len(heap) == 50
    assert len(entries) < 100, "no compaction ran"
    assert heap._entries is entries
    want = [f"k{i:03d}" for i in range(40, 200, 4)] + [f"k{i:03d}" for i in range(36, -1, -4)]
    assert drain(heap) == want
    assert not entries


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["push", "update", "remove", "pop", "fix", "many", "rebuild"]),
            st.text(alphabet="abcdef", min_size=1, max_size=2),
            st.integers(0, 3),
            st.integers(0, 3),
        ),
        max_size=120,
    )
)
def test_flat_entries_pop_as_nested_entries(ops: list[tuple[str, str, int, int]]) -> None:
    """``flat=True`` (the order's fields stored in the entry, as the ClusterQueue heaps do) gives the
    same results as nested entries for every operation, with ties left to the sequence number
    (the orders here are not total: equal orders of different keys pop oldest first)."""
    order = lambda item: (item[0], item[1])  # noqa: E731 - not total: ties between keys
    nested: KeyedHeap[str, tuple[int, int, str]] = KeyedHeap(order)
    flat: KeyedHeap[str, tuple[int, int, str]] = KeyedHeap(order, flat=True)
    for op, key, a, b in ops:
        item = (a, b, key)
        if op == "push":
            assert flat.push_if_absent(key, item) == nested.push_if_absent(key, item)
        elif op == "update":
            flat.push_or_update(key, item)
            nested.push_or_update(key, item)
        elif op == "remove":
            assert flat.remove(key) == nested.remove(key)
        elif op == "pop":
            assert flat.pop() == nested.pop()
        elif op == "fix":
            flat.fix(key)
            nested.fix(key)
        elif op == "many":
            keys = sorted({key, key[::-1], key[:1]})
            assert flat.remove_many(keys) == nested.remove_many(keys)
        else:
            flat.rebuild()
            nested.rebuild()
        assert flat.peek() == nested.peek()
        assert len(flat) == len(nested)
    assert flat.sorted_items() == nested.sorted_items()
    assert [flat.pop() for _ in range(len(flat) + 1)] == [nested.pop() for _ in range(len(nested) + 1)]
