"""Kubernetes resource quantities, exactly as apimachinery's ``resource.Quantity`` treats them.

Parsing is exact (rational arithmetic); Kueue's integer model converts ``cpu`` to milli-units and
every other resource to whole base units, rounding up, and saturates at the int64 bounds with a
reserved ``UNLIMITED`` sentinel for quotas (upstream ``pkg/resources/amount.go``; apimachinery ``resource.Quantity``).
"""

from __future__ import annotations

import functools
import math
import re
from enum import Enum
from fractions import Fraction

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
UNLIMITED = MAX_INT64
"""Sentinel for an unbounded quota amount (upstream ``resources.Unlimited``)."""
MAX_BOUNDED = UNLIMITED - 1
"""The largest amount a bounded total may reach: UNLIMITED is reserved (upstream
``resources.Amount``'s ``boundedAmount``), and a total clamped to it would read as "no limit"."""

_NANO = Fraction(1, 10**9)


class QuantityFormat(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class QuantityError(ValueError):
    """Raised for a string that is not a valid Kubernetes quantity."""


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_NUMBER_RE = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(.*)$")
_EXPONENT_RE = re.compile(r"^[eE]([+-]?\d+)$")


class Quantity:
    """An exact quantity with the print format its suffix implies."""

    __slots__ = ("format", "value")
    value: Fraction
    format: QuantityFormat

    def __init__(self, value: Fraction, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "format", fmt)

    def __setattr__(self, name: str, value: object) -> None:
        # Parsed quantities are cached and shared (``Quantity.parse``): never mutate one.
        raise AttributeError(f"Quantity is immutable (cannot set {name})")

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse a quantity string (or a YAML number) exactly; raise QuantityError if invalid.

        String results are cached (the same few strings are parsed on every request; Quantity
        objects are never mutated, so sharing them is safe)."""
        if type(text) is str and cls is Quantity:
            return _parse_string(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str | int | float) -> Quantity:
        if isinstance(text, bool):
            raise QuantityError(f"quantities must match the regular expression: {text!r}")
        if isinstance(text, int):
            return cls(Fraction(text), QuantityFormat.DECIMAL_SI)
        if isinstance(text, float):
            if not math.isfinite(text):
                raise QuantityError(f"quantities must be finite: {text!r}")
            text = repr(text)
        s = text.strip() if isinstance(text, str) else text
        if not s or s != text:
            raise QuantityError(f"quantities must match the regular expression '{_QTY_PATTERN}'")
        m = _NUMBER_RE.match(s)
        if not m:
            raise QuantityError(f"quantities must match the regular expression '{_QTY_PATTERN}'")
        sign, number, suffix = m.groups()
        magnitude = Fraction(number)
        fmt: QuantityFormat
        if suffix in _BINARY:
            value = magnitude * (2 ** _BINARY[suffix])
            fmt = QuantityFormat.BINARY_SI
        elif suffix in _DECIMAL:
            value = magnitude * Fraction(10) ** _DECIMAL[suffix]
            fmt = QuantityFormat.DECIMAL_SI
        else:
            em = _EXPONENT_RE.match(suffix)
            if not em:
                raise QuantityError(f"quantities must match the regular expression '{_QTY_PATTERN}'")
            value = magnitude * Fraction(10) ** int(em.group(1))
            fmt = QuantityFormat.DECIMAL_EXPONENT
        if sign == "-":
            value = -value
        value = _round_up_to_nano(value)
        if fmt is QuantityFormat.BINARY_SI:
            if value > MAX_INT64:
                value = Fraction(MAX_INT64)
            if 0 < abs(value) < 1:
                fmt = QuantityFormat.DECIMAL_SI
        return cls(value, fmt)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self})"

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def int_value(self) -> int:
        """``Value()``: ceil of the quantity, clamped to int64."""
        return _clamp(math.ceil(self.value))

    def milli_value(self) -> int:
        """``MilliValue()``: ceil of the quantity times 1000, clamped to int64."""
        return _clamp(math.ceil(self.value * 1000))


_QTY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def _round_up_to_nano(value: Fraction) -> Fraction:
    if value.denominator == 1 or (_NANO.denominator % value.denominator == 0):
        return value
    scaled = value / _NANO
    rounded = math.ceil(scaled) if value > 0 else math.floor(scaled)
    return rounded * _NANO


def _clamp(v: int) -> int:
    if v > MAX_INT64:
        return MAX_INT64
    if v < MIN_INT64:
        return MIN_INT64
    return v


def format_quantity(value: Fraction, fmt: QuantityFormat) -> str:
    """Canonical printing of apimachinery's ``Quantity.String()``."""
    if value == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI:
        if abs(value) >= 1024 and value.denominator == 1:
            n = int(value)
            exp = 0
            while exp < 60 and n % 1024 == 0 and abs(n) >= 1024:
                n //= 1024
                exp += 10
            suffix = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}[exp]
            return f"{n}{suffix}"
        fmt = QuantityFormat.DECIMAL_SI
    # value = mantissa * 10**exponent with integer mantissa, then exponent lowered to a multiple of 3.
    negative = value < 0
    v = -value if negative else value
    exponent = 0
    while v.denominator != 1:
        v *= 10
        exponent -= 1
    mantissa = int(v)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    sign = "-" if negative else ""
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    if exponent in _DECIMAL_SUFFIX:
        return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    if exponent > 18:
        mantissa *= 10 ** (exponent - 18)
        return f"{sign}{mantissa}E"
    return f"{sign}{mantissa}e{exponent}"


@functools.lru_cache(maxsize=8192)
def _parse_string(text: str) -> Quantity:
    return Quantity._parse(text)


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse ``text`` as a Kubernetes quantity."""
    return Quantity.parse(text)


def is_valid_quantity(text: object) -> bool:
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        return False
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


# --- Kueue's integer resource model ---------------------------------------------------------------

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


def is_byte_resource(resource: str) -> bool:
    return resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-")


def resource_value(resource: str, quantity: str | int | float | Quantity) -> int:
    """Integer form of a request: milli-units for ``cpu``, ceil base units otherwise (clamped)."""
    q = quantity if isinstance(quantity, Quantity) else Quantity.parse(quantity)
    return q.milli_value() if resource == CPU else q.int_value()


def quota_amount(resource: str, quantity: str | int | float | Quantity) -> int:
    """Quota form of a quantity: like ``resource_value`` but ≥ the int64 bound becomes UNLIMITED."""
    q = quantity if isinstance(quantity, Quantity) else Quantity.parse(quantity)
    if resource == CPU:
        if q.value >= Fraction(MAX_INT64, 1000):
            return UNLIMITED
        return q.milli_value()
    if q.value >= MAX_INT64:
        return UNLIMITED
    return q.int_value()


@functools.lru_cache(maxsize=65536)
def resource_quantity_string(resource: str, value: int) -> str:
    """Status form of an integer amount (``resources.ResourceFormatter.ResourceQuantity``)."""
    if resource == CPU:
        return format_quantity(Fraction(value, 1000), QuantityFormat.DECIMAL_SI)
    if is_byte_resource(resource):
        binary = format_quantity(Fraction(value), QuantityFormat.BINARY_SI)
        return str(Quantity.parse(binary))
    return format_quantity(Fraction(value), QuantityFormat.DECIMAL_SI)


def format_amount(resource: str, value: int) -> str:
    """Amount in scheduler messages: upstream ``ResourceFormatter.AmountQuantityString``.

    Byte amounts are re-parsed after the BinarySI step like ``newCanonicalQuantity``, so
    1500000000 prints "1500M" (pkg/resources/resource_formatter.go)."""
    if value == UNLIMITED:
        return "<unlimited>"
    return resource_quantity_string(resource, value)


# --- saturating int64 arithmetic with the UNLIMITED sentinel ---------------------------------------


def sat_add(a: int, b: int) -> int:
    if a == UNLIMITED or b == UNLIMITED:
        return UNLIMITED
    return _clamp(a + b)


def sat_sub(a: int, b: int) -> int:
    if a == UNLIMITED and b == UNLIMITED:
        return 0
    if a == UNLIMITED:
        return UNLIMITED
    if b == UNLIMITED:
        return MIN_INT64
    return _clamp(a - b)


def sat_mul(a: int, b: int) -> int:
    return _clamp(a * b)
