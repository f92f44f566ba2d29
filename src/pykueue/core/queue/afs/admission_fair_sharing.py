"""The arithmetic of Admission Fair Sharing (upstream ``pkg/util/admissionfairsharing/admission_fair_sharing.go``
and ``pkg/util/resource/resource.go`` ``MulByFloat``, ``MergeResourceListKeepSum``).

A resource list maps a resource name to an exact amount in base units (``cpu: 4`` is four
cores), as a ``Fraction``: upstream keeps these as arbitrary-precision ``resource.Quantity``
values so that sub-milli contributions of a long half-life still accumulate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.kueue import LocalQueue
from pykueue.api.quantity import parse_quantity

ResourceList = dict[str, Fraction]

MUL_BY_FLOAT_SCALE = 9
"""Upstream ``mulByFloatScale``: products are rounded back to nine decimal places."""


def mul_by_float(q: Mapping[str, Fraction] | None, f: float) -> ResourceList:
    """Upstream ``resource.MulByFloat``: every amount times ``f``, rounded toward zero to
    :data:`MUL_BY_FLOAT_SCALE` decimals (so a value scaled by a factor below one decays to zero)."""
    if not math.isfinite(f):
        raise ValueError(f"MulByFloat called with a non-finite factor: {f}")
    if q is None:
        return {}
    # strconv.FormatFloat(f, 'f', -1, 64) and Python's repr both give the shortest round-trip digits.
    factor = Fraction(repr(f))
    scale = 10**MUL_BY_FLOAT_SCALE
    return {k: Fraction(math.trunc(v * factor * scale), scale) for k, v in q.items()}


def merge_keep_sum(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> ResourceList:
    """Upstream ``resource.MergeResourceListKeepSum``."""
    out: ResourceList = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = out[k] + v if k in out else v
    return out


def calculate_alpha_rate(sampling: float, half_life_time: float) -> float:
    """Upstream ``calculateAlphaRate``: the weight of a new sample after ``sampling`` seconds."""
    if half_life_time == 0:
        return 0.0
    return 1.0 - math.pow(0.5, sampling / half_life_time)


def duration_seconds(d: Duration | None) -> float:
    """Go's ``time.Duration.Seconds`` (an unset duration is zero)."""
    if d is None:
        return 0.0
    sec, nsec = divmod(d.nanoseconds, 10**9)
    return sec + nsec / 1e9


def calculate_entry_penalty(
    total_requests: Mapping[str, Fraction], afs: AdmissionFairSharingConfig
) -> ResourceList:
    """Upstream ``CalculateEntryPenalty``: the requests scaled by one sampling interval's alpha."""
    alpha = calculate_alpha_rate(
        duration_seconds(afs.usage_sampling_interval), duration_seconds(afs.usage_half_life_time)
    )
    return mul_by_float(total_requests, alpha)


def lq_weight_as_float(lq: LocalQueue | None) -> float:
    """Upstream ``LQWeightAsFloat64``; a missing LocalQueue weighs 1 (``ResolveLQWeight``)."""
    if lq is not None and lq.spec.fair_sharing is not None and lq.spec.fair_sharing.weight is not None:
        return float(parse_quantity(lq.spec.fair_sharing.weight).value)
    return 1.0


def calculate_usage(
    consumed: Mapping[str, Fraction] | None,
    penalty: Mapping[str, Fraction] | None,
    lq_weight: float,
    res_weights: Mapping[str, float],
) -> float:
    """Upstream ``CalculateUsage``: weighted sum of consumed and pending penalty over the
    LocalQueue's weight, keys in sorted order; a non-positive weight gives +Inf (sorted last)."""
    all_resources = merge_keep_sum(consumed, penalty)
    usage = 0.0
    for name in sorted(all_resources):
        usage += res_weights.get(name, 1.0) * float(all_resources[name])
    if lq_weight <= 0:
        return math.inf
    return usage / lq_weight


def calculate_decayed_consumed(
    old_usage: Mapping[str, Fraction] | None,
    new_usage: Mapping[str, Fraction] | None,
    elapsed: float,
    half_life_time: float,
) -> ResourceList:
    """Upstream ``CalculateDecayedConsumed``: ``old * (1 - alpha) + new * alpha``."""
    alpha = calculate_alpha_rate(elapsed, half_life_time)
    return merge_keep_sum(mul_by_float(old_usage, 1 - alpha), mul_by_float(new_usage, alpha))
