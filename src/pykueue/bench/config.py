"""The generator configuration of Kueue's scheduler benchmark, read as upstream reads it.

Schema: upstream's test/performance/scheduler/runner/generator/generator.go (``Config``,
``CohortSet``, ``QueuesSet``, ``WorkloadsSet``, ``WorkloadTemplate``). Quantities may be written
as YAML numbers or strings (sigs.k8s.io/yaml turns a number into the string field). The TAS
fields (``topology``, ``resourceFlavor``, ``podCount``, ``tasConstraint``...) are refused with a
clear error rather than ignored: this benchmark does not generate topologies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pykueue.api.quantity import QuantityError, parse_quantity

BUILTIN = ("baseline", "large-scale")
"""Configurations shipped with pykueue (package data, upstream's values)."""

PREEMPTION_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")


@dataclass(frozen=True)
class Published:
    """Upstream's published figures for a shipped configuration (its rangespec.yaml: the mean of
    its calibration runs, and the checker's bound)."""

    wall_seconds: float
    max_wall_seconds: float
    usage_percent: float
    min_usage_percent: float
    avg_time_to_admission_seconds: Mapping[str, float]
    max_avg_time_to_admission_seconds: Mapping[str, float]


PUBLISHED: dict[str, Published] = {
    # configs/baseline/rangespec.yaml (5 runs)
    "baseline": Published(
        351.1, 425.0, 55.9, 50.0, {"small": 215.5, "medium": 76.8, "large": 16.5},
        {"small": 260.0, "medium": 90.0, "large": 23.0},
    ),
    # configs/large-scale/rangespec.yaml (19 periodic runs)
    "large-scale": Published(
        1179.4, 1416.0, 38.64, 31.6, {"small": 700.4, "medium": 256.4, "large": 105.6},
        {"small": 841.0, "medium": 308.0, "large": 128.0},
    ),
}  # fmt: skip


class ConfigError(ValueError):
    """The generator configuration is not valid; the message names the file, the field and the rule."""


@dataclass(frozen=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: str
    request_milli: int


@dataclass(frozen=True)
class WorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True)
class QueuesSet:
    class_name: str
    count: int
    nominal_quota: str
    nominal_milli: int
    borrowing_limit: str | None
    reclaim_within_cohort: str
    within_cluster_queue: str
    workloads_sets: tuple[WorkloadsSet, ...]


@dataclass(frozen=True)
class CohortSet:
    class_name: str
    count: int
    queues_sets: tuple[QueuesSet, ...]


@dataclass(frozen=True)
class BenchConfig:
    name: str
    cohorts: tuple[CohortSet, ...]

    @property
    def workload_count(self) -> int:
        return sum(
            cs.count * qs.count * ws.count * len(ws.workloads)
            for cs in self.cohorts
            for qs in cs.queues_sets
            for ws in qs.workloads_sets
        )


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, rule: str) -> ConfigError:
        return ConfigError(f"{self.source}: {path}: {rule}")

    def mapping(self, value: Any, path: str, known: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be a mapping")
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise self.fail(f"{path}.{unknown[0]}", f"unknown field (known: {', '.join(known)})")
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.fail(path, "must be a non-empty list")
        return value

    def count(self, value: Any, path: str, minimum: int = 1) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(path, f"must be an integer ≥ {minimum}, got {value!r}")
        return value

    def name(self, value: Any, path: str) -> str:
        # Names become parts of object names (``cq-0-3-cohort-1``, ``small-0-12-0``).
        if not isinstance(value, str) or not value or not all(c.isalnum() or c == "-" for c in value):
            raise self.fail(path, f"must be a non-empty name of letters, digits and '-', got {value!r}")
        return value.lower()

    def quantity(self, value: Any, path: str) -> tuple[str, int]:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(path, f"must be a quantity, got {value!r}")
        try:
            q = parse_quantity(value)
        except QuantityError as err:
            raise self.fail(path, f"not a quantity: {err}") from None
        if q.value < 0:
            raise self.fail(path, f"must not be negative, got {value!r}")
        return str(value), q.milli_value()

    def policy(self, value: Any, path: str) -> str:
        if value is None:
            return "Never"
        if value not in PREEMPTION_POLICIES:
            raise self.fail(path, f"must be one of {', '.join(PREEMPTION_POLICIES)}, got {value!r}")
        return str(value)


def parse_config(doc: Any, source: str, name: str) -> BenchConfig:
    """Validate a generator.yaml document; every error names the field and the rule."""
    r = _Reader(source)
    top = r.mapping(doc, "(top level)", ("cohorts", "topology", "resourceFlavor"))
    for tas in ("topology", "resourceFlavor"):
        if top.get(tas) is not None:
            raise r.fail(tas, "TAS configurations are not supported by this benchmark")
    cohorts = []
    for ci, c in enumerate(r.items(top.get("cohorts"), "cohorts")):
        cp = f"cohorts[{ci}]"
        c = r.mapping(c, cp, ("className", "count", "queuesSets"))
        queues = []
        for qi, q in enumerate(r.items(c.get("queuesSets"), f"{cp}.queuesSets")):
            qp = f"{cp}.queuesSets[{qi}]"
            q = r.mapping(
                q, qp, ("className", "count", "nominalQuota", "borrowingLimit", "reclaimWithinCohort",
                        "withinClusterQueue", "workloadsSets"),
            )  # fmt: skip
            nominal, nominal_milli = r.quantity(q.get("nominalQuota"), f"{qp}.nominalQuota")
            borrowing = q.get("borrowingLimit")
            if borrowing is not None:
                borrowing = r.quantity(borrowing, f"{qp}.borrowingLimit")[0]
            sets = []
            for si, s in enumerate(r.items(q.get("workloadsSets"), f"{qp}.workloadsSets")):
                sp = f"{qp}.workloadsSets[{si}]"
                s = r.mapping(s, sp, ("count", "creationIntervalMs", "workloads"))
                templates = []
                for wi, w in enumerate(r.items(s.get("workloads"), f"{sp}.workloads")):
                    wp = f"{sp}.workloads[{wi}]"
                    w = r.mapping(
                        w, wp, ("className", "runtimeMs", "priority", "request", "podCount", "tasConstraint",
                                "tasLevel", "sliceSize"),
                    )  # fmt: skip
                    for tas in ("tasConstraint", "tasLevel", "sliceSize"):
                        if w.get(tas):
                            raise r.fail(f"{wp}.{tas}", "TAS workloads are not supported by this benchmark")
                    if w.get("podCount", 1) not in (0, 1):
                        raise r.fail(f"{wp}.podCount", "only one pod per workload is supported")
                    priority = w.get("priority", 0)
                    if not isinstance(priority, int) or isinstance(priority, bool):
                        raise r.fail(f"{wp}.priority", f"must be an integer, got {priority!r}")
                    request, request_milli = r.quantity(w.get("request"), f"{wp}.request")
                    if request_milli > nominal_milli and borrowing is None:
                        raise r.fail(f"{wp}.request", f"{request} exceeds the queue's nominalQuota {nominal}")
                    templates.append(
                        WorkloadTemplate(
                            r.name(w.get("className"), f"{wp}.className"),
                            r.count(w.get("runtimeMs", 0), f"{wp}.runtimeMs", 0),
                            priority,
                            request,
                            request_milli,
                        )
                    )
                sets.append(
                    WorkloadsSet(
                        r.count(s.get("count"), f"{sp}.count"),
                        r.count(s.get("creationIntervalMs", 0), f"{sp}.creationIntervalMs", 0),
                        tuple(templates),
                    )
                )
            queues.append(
                QueuesSet(
                    r.name(q.get("className"), f"{qp}.className"),
                    r.count(q.get("count"), f"{qp}.count"),
                    nominal,
                    nominal_milli,
                    borrowing,
                    r.policy(q.get("reclaimWithinCohort"), f"{qp}.reclaimWithinCohort"),
                    r.policy(q.get("withinClusterQueue"), f"{qp}.withinClusterQueue"),
                    tuple(sets),
                )
            )
        cohorts.append(
            CohortSet(r.name(c.get("className"), f"{cp}.className"), r.count(c.get("count"), f"{cp}.count"),
                      tuple(queues))
        )  # fmt: skip
    return BenchConfig(name, tuple(cohorts))


def load_config(spec: str) -> BenchConfig:
    """``baseline``, ``large-scale`` (shipped) or the path of a generator.yaml."""
    if spec in BUILTIN:
        text = resources.files("pykueue.bench").joinpath("configs").joinpath(f"{spec}.yaml").read_text()
        source, name = f"built-in config {spec}", spec
    else:
        path = Path(spec)
        try:
            text = path.read_text()
        except OSError as err:
            raise ConfigError(
                f"--config {spec}: not a built-in config ({', '.join(BUILTIN)}) and not readable: {err.strerror}"
            ) from None
        source, name = str(path), path.stem
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML: {err}") from None
    return parse_config(doc, source, name)
