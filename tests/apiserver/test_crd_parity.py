"""The generated CRDs (config/crd/) against upstream Kueue's, rule by rule.

Upstream's CRDs at the reference revision sit next to the clone
(``../shared/reference/upstream-crds``); without them the comparison is skipped with that reason.
Embedded pod templates are left out: their schema is the core/v1 PodTemplateSpec, not Kueue's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT.parent / "shared" / "reference" / "upstream-crds"
OURS = ROOT / "config" / "crd"
FILES = sorted(p.name for p in OURS.glob("*.yaml"))  # generated: tests/apiserver/test_crdgen.py

needs_upstream = pytest.mark.skipif(
    not UPSTREAM.is_dir(), reason=f"upstream CRDs not found at {UPSTREAM} (../shared/reference/upstream-crds)"
)


def _walk(node: dict[str, Any], path: str, out: dict[str, list[tuple[str, str]]], keyword: str) -> None:
    if keyword in node:
        out[path] = [(r["rule"], r.get("message", "")) for r in node[keyword]]
    for name, child in (node.get("properties") or {}).items():
        child_path = f"{path}.{name}" if path else name
        if not child_path.endswith("].template"):
            _walk(child, child_path, out, keyword)
    if isinstance(node.get("items"), dict):
        _walk(node["items"], f"{path}[]", out, keyword)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(node["additionalProperties"], f"{path}{{}}", out, keyword)


def _cel(crd: dict[str, Any]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for version in crd["spec"]["versions"]:
        rules: dict[str, list[tuple[str, str]]] = {}
        _walk(version["schema"]["openAPIV3Schema"], "", rules, "x-kubernetes-validations")
        out[version["name"]] = rules
    return out


@needs_upstream
@pytest.mark.parametrize("name", FILES)
def test_cel_rules_and_messages_match_upstream(name: str) -> None:
    ours = _cel(yaml.safe_load((OURS / name).read_text()))
    upstream = _cel(yaml.safe_load((UPSTREAM / name).read_text()))
    assert set(ours) == set(upstream)
    for version in upstream:
        for path in sorted(set(ours[version]) | set(upstream[version])):
            assert ours[version].get(path) == upstream[version].get(path), f"{name} {version} {path!r}"
