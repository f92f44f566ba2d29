"""The generated CRDs (config/crd/) against upstream Kueue's, rule by rule.

Upstream's CRDs at the reference revision sit next to the clone
(``../shared/reference/upstream-crds``); without them the comparison is skipped with that reason.
Embedded pod templates are compared too: ours are derived from pykueue's own core/v1 model
(``pykueue.apiserver.builtin.core``), upstream's are controller-gen's rendering of the Go types.
Descriptions are not compared.
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
        _walk(child, f"{path}.{name}" if path else name, out, keyword)
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
    "type", "enum", "maxLength", "minLength", "maximum", "minimum", "pattern", "maxItems", "minItems",
    "maxProperties", "minProperties", "format", "required", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "default", "nullable", "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-map-type", "anyOf", "additionalProperties",
)  # fmt: skip
def _keywords(node: dict[str, Any], path: str, out: set[str]) -> None:
    for key in KEYWORDS:
        if key in node and not (key == "additionalProperties" and isinstance(node[key], dict)):
            value = sorted(node[key]) if key == "required" else node[key]
            out.add(f"{path or '.'} {key} {json.dumps(value, sort_keys=True)}")
    if "properties" in node:  # the field names: a field only one side declares is a difference too
        out.add(f"{path or '.'} properties {json.dumps(sorted(node['properties']))}")
    for name, child in (node.get("properties") or {}).items():
        _keywords(child, f"{path}.{name}" if path else name, out)
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
@pytest.mark.parametrize("name", FILES)
def test_openapi_validations_match_upstream(name: str) -> None:
    """Every keyword of every node, the pod templates included: ``- x`` upstream has x and we do
    not, ``+ x`` the reverse (``file version sign path keyword value``)."""
    assert sorted(_differences(name)) == []


def test_the_comparison_reaches_into_the_pod_templates() -> None:
    """The walk covers the embedded core/v1 schema (an exclusion would hide its differences)."""
    ours = yaml.safe_load((OURS / "kueue.x-k8s.io_workloads.yaml").read_text())
    seen: set[str] = set()
    for version in ours["spec"]["versions"]:
        _keywords(version["schema"]["openAPIV3Schema"], "", seen)
    assert 'spec.podSets[].template.spec.containers[] required ["name"]' in seen
    assert 'spec.podSets[].template.spec.volumes[].nfs required ["path", "server"]' in seen
