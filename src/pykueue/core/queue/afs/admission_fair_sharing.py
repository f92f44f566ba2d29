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


def _pow10(n: int) -> float:
    """Go ``math.Pow10``: a product (or, for a negative ``n``, a quotient) of its correctly
    rounded tables of 1e0..1e31 and 1e0, 1e32, ..., 1e288 (1e-0, 1e-32, ..., 1e-320)."""
    if n > 308:
        return math.inf
    if n < -323:
        return 0.0
    if n >= 0:
        return float(10 ** (32 * (n // 32))) * float(10 ** (n % 32))
    m = -n
    return float(Fraction(1, 10 ** (32 * (m // 32)))) / float(10 ** (m % 32))


def as_approximate_float64(unscaled: int, exponent: int) -> float:
    """Go ``resource.Quantity.AsApproximateFloat64`` of ``unscaled * 10**exponent`` held in that
    representation: ``float64(unscaled) * math.Pow10(exponent)``, two roundings (so ``3n`` is
    ``3.0000000000000004e-09``, not the correctly rounded ``3e-09``)."""
    try:
        base = float(unscaled)
    except OverflowError:
        base = math.inf if unscaled > 0 else -math.inf
    if exponent == 0:
        return base
    return base * _pow10(exponent)


def amount_as_float(v: Fraction) -> float:
    """``AsApproximateFloat64`` of a ledger amount. Every amount upstream's arithmetic produces is
    an ``inf.Dec`` of scale nine (``MulByFloat`` rounds to :data:`MUL_BY_FLOAT_SCALE`, and sums keep
    the larger scale), so it is read as ``unscaled * 1e-9``. (A history seeded from the persisted
    status keeps the status string's own scale until its first decay, in the same reconcile; that
    transient is read at scale nine too.)"""
    n = v * 10**MUL_BY_FLOAT_SCALE
    if n.denominator != 1:
        return float(v)
    return as_approximate_float64(n.numerator, -MUL_BY_FLOAT_SCALE)


def canonical_as_float(v: Fraction) -> float:
    """``AsApproximateFloat64`` of a quantity read back from the API server, which stores the
    canonical form (``DecimalSI``: the largest exponent, a multiple of three, with an integer
    mantissa; ``700m`` for 0.7, read as ``700 * 1e-3``)."""
    if v == 0:
        return 0.0
    exponent = -9
    while (v / Fraction(10) ** exponent).denominator != 1 and exponent < 0:
        exponent += 3
    while (v / Fraction(10) ** (exponent + 3)).denominator == 1:
        exponent += 3
    mantissa = v / Fraction(10) ** exponent
    if mantissa.denominator != 1:  # finer than nano: the API rounds up to nano, not modelled
        return float(v)
    return as_approximate_float64(mantissa.numerator, exponent)


def lq_weight_as_float(lq: LocalQueue | None) -> float:
    """Upstream ``LQWeightAsFloat64`` (``Weight.AsApproximateFloat64`` of the stored quantity); a
    missing LocalQueue weighs 1 (``ResolveLQWeight``)."""
    if lq is not None and lq.spec.fair_sharing is not None and lq.spec.fair_sharing.weight is not None:
        return canonical_as_float(parse_quantity(lq.spec.fair_sharing.weight).value)
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
        usage += res_weights.get(name, 1.0) * amount_as_float(all_resources[name])
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
