"""``cluster_cache.compact``: the informers' transform makes the copy the older recursive walk made."""

from __future__ import annotations

import random
import sys
from collections import OrderedDict
from typing import Any

import pytest

from pykueue.controllers.cluster_cache import compact


class _Text(str):
    pass


def _reference(value: Any) -> Any:
    """The walk compact used before its exact-type loops (the same semantics, written plainly)."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: _reference(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reference(v) for v in value]
    return value


def _random_tree(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.35:
        return rng.choice(
            [
                "cpu" + str(rng.randrange(3)),
                "".join(rng.choice("ab-/.") for _ in range(rng.randrange(9))),
                rng.randrange(-5, 10**12),
                rng.random(),
                True,
                False,
                None,
                2**70,
            ]
        )
    if roll < 0.65:
        return [_random_tree(rng, depth + 1) for _ in range(rng.randrange(4))]
    made: dict[Any, Any] = OrderedDict() if rng.random() < 0.1 else {}
    for i in range(rng.randrange(5)):
        made["".join(rng.choice("kqz") for _ in range(1 + i % 3)) + str(i)] = _random_tree(rng, depth + 1)
    return made


def _same(a: Any, b: Any, source: Any) -> None:
    """Equal, of the same types, strings interned, and no container shared with ``source``."""
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert a is not source and list(a) == list(b)
        for (ka, va), kb, vs in zip(a.items(), b, source.values(), strict=True):
            assert ka == kb and (not isinstance(ka, str) or ka is sys.intern(ka))
            _same(va, b[kb], vs)
    elif isinstance(a, list):
        assert a is not source and len(a) == len(b)
        for va, vb, vs in zip(a, b, source, strict=True):
            _same(va, vb, vs)
    else:
        assert a == b
        if type(a) is str:
            assert a is sys.intern(a)


@pytest.mark.parametrize("seed", range(40))
def test_compact_copies_and_interns_as_the_plain_walk(seed: int) -> None:
    rng = random.Random(seed)
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w" + str(seed), "managedFields": [{"manager": "x"}], "labels": {"a": "b"}},
        "spec": _random_tree(rng),
        "status": _random_tree(rng),
        "extra": {5: [OrderedDict(k="v"), (1, "t")]},
    }
    got = compact(obj)
    want = {
        k: ({mk: _reference(mv) for mk, mv in v.items() if mk != "managedFields"} if k == "metadata" else _reference(v))
        for k, v in obj.items()
    }
    assert got == want and "managedFields" not in got["metadata"]
    for part in ("spec", "status", "extra"):
        _same(got[part], want[part], obj[part])
    _same(got["metadata"]["labels"], want["metadata"]["labels"], obj["metadata"]["labels"])


def test_a_str_subclass_is_refused_as_before() -> None:
    with pytest.raises(TypeError):
        _reference({"a": [_Text("x")]})
    with pytest.raises(TypeError):
        compact({"spec": {"a": [_Text("x")]}})
