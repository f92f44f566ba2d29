"""Resource names and quantities as ``pkg/apis/core/validation`` checks them.

Shared by the built-ins that carry resource lists outside a pod (LimitRange, RuntimeClass):

* resource-name qualification (``validateResourceName``, ``validateContainerResourceName``) with
  the ``pkg/apis/core/helper`` predicates (standard, native, extended, hugepages, overcommit);
* ``ValidateResourceQuantityValue`` (non-negative, integer resources) and the limits half of
  ``ValidateContainerResourceRequirements``;
* :func:`go_quantity`: a ``resource.Quantity`` passed by value as a ``field.Error`` bad value.
  ``Quantity.String`` has a pointer receiver, so the error prints Go's ``%#v`` of the struct
  (``resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:..., s:"500m",
  Format:"DecimalSI"}``); the struct is what ``resource.ParseQuantity`` makes of the (canonical)
  text the server holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.validation import FieldError, Raw, forbidden, invalid, key
from pykueue.kube.validation import is_qualified_name

STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "storage",
        "requests.storage",
    }
)
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
HUGEPAGES_PREFIX = "hugepages-"
REQUESTS_HUGEPAGES_PREFIX = "requests.hugepages-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."
NEGATIVE_MSG = "must be greater than or equal to 0"
NOT_INTEGER_MSG = "must be an integer"
MAX_MILLI_VALUE = (2**63 - 1) // 1000
"""``resource.MaxMilliValue``."""


# --- helper predicates (pkg/apis/core/helper) ----------------------------------------------------------


def is_hugepage_resource(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_quota_hugepage_resource(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX) or name.startswith(REQUESTS_HUGEPAGES_PREFIX)


def is_standard_resource(name: str) -> bool:
    return name in STANDARD_RESOURCES or is_quota_hugepage_resource(name)


def is_standard_container_resource(name: str) -> bool:
    return name in STANDARD_CONTAINER_RESOURCES or is_hugepage_resource(name)


def is_native_resource(name: str) -> bool:
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource(name: str) -> bool:
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return not is_qualified_name(REQUESTS_PREFIX + name)


def is_overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepage_resource(name)


def is_integer_resource(name: str) -> bool:
    return name in INTEGER_RESOURCES or is_extended_resource(name)


# --- names -----------------------------------------------------------------------------------------------


def validate_resource_name(name: str, path: str) -> list[FieldError]:
    """``validateResourceName``: a qualified name, standard unless it has a prefix."""
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name and not is_standard_resource(name):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    """``validateContainerResourceName`` (the generic errors are kept, as upstream appends)."""
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if not is_standard_container_resource(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


# --- quantities ------------------------------------------------------------------------------------------


def parse(value: Any) -> Quantity | None:
    """The quantity of a stored value (None when it is not one: the schema check reported it)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError, ValueError):
        return None


def validate_quantity_value(name: str, value: Any, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: non-negative; whole for integer resources."""
    quantity = parse(value)
    if quantity is None:
        return []
    errs: list[FieldError] = []
    if quantity.value < 0:
        errs.append(invalid(path, str(quantity), NEGATIVE_MSG))
    if is_integer_resource(name) and quantity.milli_value() % 1000 != 0:
        errs.append(invalid(path, go_quantity(value), NOT_INTEGER_MSG))
    return errs


def validate_limits(limits: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateContainerResourceRequirements`` of ``{limits: ...}`` only (RuntimeClass overhead)."""
    errs: list[FieldError] = []
    lim_path = f"{path}.limits"
    cpu_or_memory = hugepages = False
    for name in sorted(limits):
        p = key(lim_path, name)
        errs += validate_container_resource_name(name, p)
        errs += validate_quantity_value(name, limits[name], p)
        if is_hugepage_resource(name):
            hugepages = True
            problem = _hugepage_value_problem(name, limits[name])
            if problem:
                quantity = parse(limits[name])
                errs.append(invalid(p, str(quantity), problem))
        if name in ("cpu", "memory"):
            cpu_or_memory = True
    if hugepages and not cpu_or_memory:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


def _hugepage_value_problem(name: str, value: Any) -> str:
    """``validateResourceQuantityHugePageValue``: a whole multiple of the page size."""
    quantity = parse(value)
    if quantity is None:
        return ""
    page = parse(name[len(HUGEPAGES_PREFIX) :])
    divisible = (
        page is not None
        and page.value > 0
        and page.milli_value() % 1000 == 0
        and quantity.int_value() % page.int_value() == 0
    )
    return "" if divisible else f"{quantity} is not positive integer multiple of {name}"


# --- Go's %#v of a resource.Quantity --------------------------------------------------------------------

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_INT64_FACTORS = 18


def go_quantity(value: Any) -> Raw:
    """Go's ``%#v`` of the ``resource.Quantity`` ``ParseQuantity`` makes of ``value``."""
    text = str(value)
    fields = _go_parse(text)
    if fields is None:
        amount, scale, cached, fmt, dec = 0, 0, "", "DecimalSI", "(0xc000000000)"
    else:
        amount, scale, cached, fmt, dec = fields
    return Raw(
        f"resource.Quantity{{i:resource.int64Amount{{value:{amount}, scale:{scale}}}, "
        f"d:resource.infDecAmount{{Dec:(*inf.Dec){dec}}}, s:{_go_quote(cached)}, Format:{_go_quote(fmt)}}}"
    )


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_parse(text: str) -> tuple[int, int, str, str, str] | None:
    """``ParseQuantity``'s fast path: (value, scale, cached string, format, Dec pointer)."""
    if text == "0":
        return 0, 0, "0", "DecimalSI", "(nil)"
    parts = _split(text)
    if parts is None:
        return None
    positive, num, denom, suffix = parts
    interpreted = _interpret(suffix)
    if interpreted is None:
        return None
    exponent, fmt = interpreted
    mantissa = 1
    if fmt == "BinarySI":
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            amount = int(shifted)
            result = amount * mantissa
            if amount < 2**63 and result < 2**63:
                result = result if positive else -result
                if fmt == "BinarySI":
                    canonical = exponent % 10 == 0 and amount & 0x07 != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return result, scale, text if canonical else "", fmt, "(nil)"
    # the inf.Dec slow path: Go prints the pointer's address, which no one can reproduce
    if fmt == "BinarySI":
        quantity = Quantity.parse(text)
        if 0 < abs(quantity.value) < 1:
            fmt = "DecimalSI"
    return 0, 0, "", fmt, "(0xc000000000)"


def _split(text: str) -> tuple[bool, str, str, str] | None:
    """``parseQuantityString``: sign, numerator (leading zeros stripped), denominator, suffix."""
    pos, end, positive = 0, len(text), True
    if end == 0:
        return None
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
    suffix = text[pos:]
    return positive, num, denom, suffix


def _interpret(suffix: str) -> tuple[int, str] | None:
    """``quantitySuffixer.interpret``: (exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            return int(suffix[1:]), "DecimalExponent"
        except ValueError:
            return None
    return None
