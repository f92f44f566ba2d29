"""The generated CRDs (config/crd/) against upstream Kueue's, rule by rule.

Upstream's CRDs at the reference revision sit next to the clone
(``../shared/reference/upstream-crds``); without them the comparison is skipped with that reason.
Embedded pod templates are left out: their schema is the core/v1 PodTemplateSpec, not Kueue's.
"""

from __future__ import annotations

import json
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


# --- OpenAPI validations ------------------------------------------------------------------------------

KEYWORDS = (
    "enum", "maxLength", "minLength", "maximum", "minimum", "pattern", "maxItems", "minItems",
    "maxProperties", "minProperties", "format", "required", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "default", "nullable", "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-map-type",
)  # fmt: skip
KNOWN_GAPS = Path(__file__).with_name("crd_parity_known_gaps.txt")
"""The OpenAPI differences from upstream not closed yet, one ``file version path keyword value`` a line:
the list may only shrink (a new difference, or a fixed one still listed, fails the test)."""


def _keywords(node: dict[str, Any], path: str, out: set[str]) -> None:
    for key in KEYWORDS:
        if key in node:
            value = sorted(node[key]) if key == "required" else node[key]
            out.add(f"{path or '.'} {key} {json.dumps(value, sort_keys=True)}")
    for name, child in (node.get("properties") or {}).items():
        child_path = f"{path}.{name}" if path else name
        if not child_path.endswith("].template"):
            _keywords(child, child_path, out)
    if isinstance(node.get("items"), dict):
        _keywords(node["items"], f"{path}[]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _keywords(node["additionalProperties"], f"{path}{{}}", out)


def _differences(name: str) -> set[str]:
    ours = yaml.safe_load((OURS / name).read_text())
    upstream = yaml.safe_load((UPSTREAM / name).read_text())
    out: set[str] = set()
    for version in upstream["spec"]["versions"]:
        mine = next(v for v in ours["spec"]["versions"] if v["name"] == version["name"])
        theirs_set: set[str] = set()
        ours_set: set[str] = set()
        _keywords(version["schema"]["openAPIV3Schema"], "", theirs_set)
        _keywords(mine["schema"]["openAPIV3Schema"], "", ours_set)
        out |= {f"{name} {version['name']} - {d}" for d in theirs_set - ours_set}
        out |= {f"{name} {version['name']} + {d}" for d in ours_set - theirs_set}
    return out


@needs_upstream
def test_openapi_validations_match_upstream_but_for_the_known_gaps() -> None:
    found = set().union(*(_differences(name) for name in FILES))
    known = {line for line in KNOWN_GAPS.read_text().splitlines() if line and not line.startswith("#")}
    assert sorted(found - known) == [], "new differences from upstream's CRDs"
    assert sorted(known - found) == [], f"closed gaps still listed in {KNOWN_GAPS.name}: remove them"
