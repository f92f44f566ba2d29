"""Validation of Kueue objects as the API server and Kueue's webhooks perform it (CRD schemas and ``pkg/webhooks``).

Admission runs in two stages, like a real API server:

1. *schema*: the CRD's OpenAPI rules (patterns, lengths, enums, item counts, list-map keys) and
   its CEL rules (``x-kubernetes-validations``), plus object-metadata checks. CEL rules are
   skipped when a "blocking" schema error is present (apiextensions ``hasBlockingErr``), in which
   case a ``<nil>`` notice is appended, exactly as the apiserver does.
2. *webhook*: Kueue's validating webhooks (``pkg/webhooks``); they only run when stage 1 passed.

:func:`validate` returns the errors the API server would report; :func:`validate_or_raise`
raises :class:`ValidationFailed` whose message reads like the apiserver's. Error messages follow
apimachinery's ``field.Error`` rendering (``spec.x: Invalid value: "v": detail``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final, NamedTuple

import msgspec

from pykueue.api import celrules, gojson
from pykueue.api import kueue as k
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.meta import EPOCH, Condition, LabelSelector, is_condition_true
from pykueue.api.quantity import Quantity, is_valid_quantity, resource_value
from pykueue.api.strconv import INT32, parse_int
from pykueue.kube.validation import (
    DNS1123_LABEL_FMT,
    DNS1123_SUBDOMAIN_FMT,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    regex_error,
)

# --- field errors -----------------------------------------------------------------------------------

INVALID = "Invalid"
REQUIRED = "Required"
DUPLICATE = "Duplicate"
NOT_SUPPORTED = "Unsupported value"
TOO_MANY = "Too many"
TOO_LONG = "Too long"
FORBIDDEN = "Forbidden"
NOT_FOUND = "Not found"
TYPE_INVALID = "TypeInvalid"
"""Field error types (``type`` of :class:`FieldError`)."""

_RENDERED_TYPE = {
    INVALID: "Invalid value",
    REQUIRED: "Required value",
    DUPLICATE: "Duplicate value",
    TYPE_INVALID: "Invalid value",
}
_VALUELESS_TYPES = frozenset({REQUIRED, FORBIDDEN, TOO_LONG})
ROOT_PATH = "<nil>"
"""Field path of errors attached to the object root (Go prints a nil ``*field.Path`` as ``<nil>``)."""


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()
"""Marker for an error without a value (``field.OmitValueType``)."""


class Raw(str):
    """A value rendered verbatim (like a Go ``Stringer``), not quoted."""

    __slots__ = ()


@dataclass(frozen=True)
class FieldError:
    """One field error, rendered like apimachinery's ``field.Error``."""

    field: str
    type: str
    value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """The message without the field path (``ErrorBody``)."""
        text = _RENDERED_TYPE.get(self.type, self.type)
        if self.type not in _VALUELESS_TYPES and self.value is not OMIT:
            text = f"{text}: {render_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def render_value(value: Any) -> str:
    """Render a bad value the way Go's ``field.Error`` does (strings quoted, null for nil)."""
    if value is None:
        return '"null"'
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "}"
    if isinstance(value, msgspec.Struct):
        return json.dumps(msgspec.to_builtins(value), separators=(",", ":"), default=str)
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)


def _go_float(value: float) -> str:
    """Go ``%v`` of a float64 (``strconv.FormatFloat(f, 'g', -1, 64)``)."""
    if not math.isfinite(value):
        return "+Inf" if value > 0 else ("-Inf" if value < 0 else "NaN")
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    exp10 = len(mantissa) - 1 + exponent
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        frac = f".{mantissa[1:]}" if len(mantissa) > 1 else ""
        return f"{prefix}{mantissa[0]}{frac}e{'+' if exp10 >= 0 else '-'}{abs(exp10):02d}"
    return prefix + format(Decimal(repr(abs(value))).normalize(), "f")


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """``field.Invalid``."""
    return FieldError(path, INVALID, value, detail)


def required(path: str, detail: str = "") -> FieldError:
    """``field.Required``."""
    return FieldError(path, REQUIRED, OMIT, detail)


def forbidden(path: str, detail: str) -> FieldError:
    """``field.Forbidden``."""
    return FieldError(path, FORBIDDEN, OMIT, detail)


def duplicate(path: str, value: Any, detail: str = "") -> FieldError:
    """``field.Duplicate``."""
    return FieldError(path, DUPLICATE, value, detail)


def not_found(path: str, value: Any) -> FieldError:
    """``field.NotFound``."""
    return FieldError(path, NOT_FOUND, value)


def not_supported(path: str, value: Any, allowed: Iterable[str]) -> FieldError:
    """``field.NotSupported`` (``supported values: "a", "b"``)."""
    quoted = [json.dumps(str(v), ensure_ascii=False) for v in allowed]
    return FieldError(path, NOT_SUPPORTED, value, f"supported values: {', '.join(quoted)}" if quoted else "")


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    """``field.TooMany``."""
    return FieldError(
        path, TOO_MANY, actual, f"must have at most {maximum} {'item' if maximum == 1 else 'items'}"
    )


def too_long(path: str, maximum: int) -> FieldError:
    """``field.TooLong``."""
    return FieldError(
        path, TOO_LONG, OMIT, f"may not be more than {maximum} {'byte' if maximum == 1 else 'bytes'}"
    )


def idx(path: str, i: int) -> str:
    """``path[i]``."""
    return f"{path}[{i}]"


def key(path: str, name: str) -> str:
    """``path[name]`` (map key)."""
    return f"{path}[{name}]"


def schema_key(path: str, name: str) -> str:
    """``path.name``: a map value's path in a CRD's OpenAPI validation errors (kube-openapi joins
    ``additionalProperties`` keys with a dot; Go validation code prints ``path[name]``: :func:`key`)."""
    return f"{path}.{name}"


# --- apimachinery string validators ----------------------------------------------------------------

_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"

_CONDITION_REASON_RE = re.compile(f"^{_CONDITION_REASON_FMT}$")
_HTTP_PATH_RE = re.compile(f"^{_HTTP_PATH_FMT}$")

_CONDITION_REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string of "
    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'"
)
IS_NEGATIVE_MSG = "must be greater than or equal to 0"
FIELD_IMMUTABLE_MSG = "field is immutable"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def mask_trailing_dash(name: str) -> str:
    """apimachinery ``maskTrailingDash``: a generateName prefix ending in '-' is checked as if a
    suffix followed (Go's code drops the last two characters before adding 'a'; kept as is)."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def generate_name_errors(
    generate_name: str, name_check: Callable[[str], list[str]], path: str = "metadata"
) -> list[FieldError]:
    """``ValidateObjectMetaAccessor``'s ``generateName`` check (the name function with prefix=true)."""
    if not generate_name:
        return []
    return [
        invalid(f"{path}.generateName", generate_name, msg)
        for msg in name_check(mask_trailing_dash(generate_name))
    ]


_REMEMBERED_MAX_LEN: Final = 316
"""The longest string a validation memo keeps (a qualified name's limit; label values 63, reasons
1,024): a longer one is checked each time, so a client cannot pin megabytes of refused values."""


def _remembered(check: Callable[[str], list[str]]) -> Callable[[str], tuple[str, ...]]:
    """``check`` as a tuple, remembered for strings of at most :data:`_REMEMBERED_MAX_LEN`."""
    memo = functools.lru_cache(maxsize=4096)(lambda text: tuple(check(text)))

    def problems(text: str) -> tuple[str, ...]:
        return memo(text) if len(text) <= _REMEMBERED_MAX_LEN else tuple(check(text))

    return problems


_qualified_name_problems = _remembered(is_qualified_name)
"""``is_qualified_name``, remembered: the same few label and annotation keys (and condition
types) come with every object, and each check runs regular expressions."""

_label_value_problems = _remembered(is_valid_label_value)
"""``is_valid_label_value``, remembered (label values repeat across objects as their keys do)."""


def validate_label_name(name: str, path: str) -> list[FieldError]:
    """``ValidateLabelName``: one Invalid error per qualified-name problem."""
    return [invalid(path, name, msg) for msg in _qualified_name_problems(name)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """``ValidateLabels`` (keys qualified names, values label values; errors at ``path``)."""
    errs: list[FieldError] = []
    for name in sorted(labels):
        errs += validate_label_name(name, path)
        errs += [invalid(path, labels[name], msg) for msg in _label_value_problems(labels[name])]
    return errs


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """``ValidateAnnotations``: case-insensitive qualified-name keys, total size ≤ 256 KiB."""
    errs = [
        invalid(path, name, msg)
        for name in sorted(annotations)
        for msg in _qualified_name_problems(name.lower())
    ]
    size = sum(len(name) + len(value) for name, value in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_label_selector(selector: LabelSelector | None, path: str) -> list[FieldError]:
    """``ValidateLabelSelector`` with default options."""
    if selector is None:
        return []
    errs = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, req in enumerate(selector.match_expressions):
        p = idx(f"{path}.matchExpressions", i)
        if req.operator in ("In", "NotIn"):
            if not req.values:
                errs.append(required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                errs.append(
                    forbidden(
                        f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        else:
            errs.append(invalid(f"{p}.operator", req.operator, "not a valid selector operator"))
        errs += validate_label_name(req.key, f"{p}.key")
        for j, value in enumerate(req.values):
            errs += [invalid(idx(f"{p}.values", j), value, msg) for msg in is_valid_label_value(value)]
    return errs


def validate_conditions(conditions: Sequence[Condition], path: str) -> list[FieldError]:
    """``metav1validation.ValidateConditions``."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        if cond.type in seen:
            errs.append(duplicate(f"{idx(path, i)}.type", cond.type))
        seen.add(cond.type)
        if not (SKIP_CLEAN_CONDITIONS and _clean_condition(cond)):
            errs += _validate_condition(cond, idx(path, i))
    return errs


SKIP_CLEAN_CONDITIONS = True
"""Whether the per-field rules of a condition are passed over when :func:`_clean_condition` shows
none can fail (False: always run them, for the tests to compare with)."""

_CONDITION_STATUSES = frozenset({"True", "False", "Unknown"})


def _clean_condition(cond: Condition) -> bool:
    """True only when neither :func:`_validate_condition` (the webhook's) nor the per-item rules of
    :func:`_schema_conditions` (the CRD's) can report anything about ``cond``: every status write
    validates its conditions twice, and those build a path string per field checked."""
    return (
        _clean_type_and_reason(cond.type, cond.reason)
        and cond.status in _CONDITION_STATUSES
        and len(cond.message) <= 32768
        and cond.last_transition_time != EPOCH
        and cond.observed_generation >= 0
    )


def _clean_type_and_reason(cond_type: str, reason: str) -> bool:
    """Whether a condition's type and reason pass every check (remembered for short strings)."""
    if len(cond_type) > 316 or len(reason) > 1024:
        return False  # too long: not clean; the general checks report it
    return _clean_type_and_reason_memo(cond_type, reason)


@functools.lru_cache(maxsize=4096)
def _clean_type_and_reason_memo(cond_type: str, reason: str) -> bool:
    """The type and reason checks of :func:`_clean_condition`, remembered: a pure function of the
    two strings, and a handful of (type, reason) pairs make up every condition a cluster writes
    (each status write checked each of its conditions' twice, with three regular expressions)."""
    return (
        len(cond_type) <= 316
        and not is_qualified_name(cond_type)
        and _compiled_pattern(CONDITION_TYPE_PATTERN).match(cond_type) is not None
        and 0 < len(reason) <= 1024
        and _CONDITION_REASON_RE.match(reason) is not None
        and _compiled_pattern(CONDITION_REASON_PATTERN).match(reason) is not None
    )


def _validate_condition(cond: Condition, p: str) -> list[FieldError]:
    errs = validate_label_name(cond.type, f"{p}.type")
    if cond.status not in ("True", "False", "Unknown"):
        errs.append(not_supported(f"{p}.status", cond.status, ["False", "True", "Unknown"]))
    if cond.observed_generation < 0:
        errs.append(
            invalid(
                f"{p}.observedGeneration", cond.observed_generation, "must be greater than or equal to zero"
            )
        )
    if cond.last_transition_time == EPOCH:
        errs.append(required(f"{p}.lastTransitionTime", "must be set"))
    if not cond.reason:
        errs.append(required(f"{p}.reason", "must be set"))
    else:
        if not _CONDITION_REASON_RE.match(cond.reason):
            detail = regex_error(
                _CONDITION_REASON_MSG,
                _CONDITION_REASON_FMT,
                "my_name",
                "MY_NAME",
                "MyName",
                "ReasonA,ReasonB",
                "ReasonA:ReasonB",
            )
            errs.append(invalid(f"{p}.reason", cond.reason, detail))
        if len(cond.reason) > 1024:
            errs.append(too_long(f"{p}.reason", 1024))
    if len(cond.message) > 32768:
        errs.append(too_long(f"{p}.message", 32768))
    return errs


def is_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """apimachinery ``IsDomainPrefixedPath`` (e.g. ``acme.io/foo``)."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.match(rest):
        errs.append(invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


# --- OpenAPI (CRD schema) checks ------------------------------------------------------------------------

DNS_SUBDOMAIN_PATTERN = f"^{DNS1123_SUBDOMAIN_FMT}$"
DNS_LABEL_PATTERN = f"^{DNS1123_LABEL_FMT}$"
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
CONDITION_TYPE_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
CONDITION_REASON_PATTERN = f"^{_CONDITION_REASON_FMT}$"
AC_PARAMETERS_KIND_PATTERN = "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"
QUALIFIED_KEY_PATTERN = CONDITION_TYPE_PATTERN

_BLOCKING_TYPES = frozenset({NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID})
CEL_SKIPPED_MSG = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def _pattern_ok(pattern: str, value: str) -> bool:
    return _compiled_pattern(pattern).match(value) is not None


@functools.cache
def _compiled_pattern(pattern: str) -> re.Pattern[str]:
    """The schemas' few patterns compiled once (``re.match`` looks each up in its cache per call)."""
    if pattern.startswith("^(?i)"):
        return re.compile("(?i)^" + pattern[5:])
    return re.compile(pattern)


def schema_string(
    path: str,
    value: str,
    *,
    max_len: int | None = None,
    min_len: int | None = None,
    pattern: str | None = None,
) -> list[FieldError]:
    """OpenAPI string checks in kube-openapi order: maxLength, minLength, pattern."""
    errs: list[FieldError] = []
    if max_len is not None and len(value) > max_len:
        errs.append(too_long(path, max_len))
    if min_len is not None and len(value) < min_len:
        errs.append(invalid(path, value, f"{path} in body should be at least {min_len} chars long"))
    if pattern is not None and not _pattern_ok(pattern, value):
        errs.append(invalid(path, value, f"{path} in body should match '{pattern}'"))
    return errs


def schema_reference(
    path: str, value: str, *, max_len: int = 253, pattern: str = DNS_SUBDOMAIN_PATTERN
) -> list[FieldError]:
    """A Kueue reference-name type (``apis/kueue/v1beta2`` ``*Reference`` types); an empty (absent) value is not checked."""
    return schema_string(path, value, max_len=max_len, pattern=pattern) if value else []


def schema_enum(path: str, value: str, allowed: Sequence[str]) -> list[FieldError]:
    """OpenAPI ``enum`` (an empty, i.e. absent, value is not checked)."""
    return [not_supported(path, value, allowed)] if value and value not in allowed else []


def schema_minimum(path: str, value: int | None, minimum: int) -> list[FieldError]:
    """OpenAPI ``minimum``."""
    if value is None or value >= minimum:
        return []
    return [invalid(path, value, f"{path} in body should be greater than or equal to {minimum}")]


def schema_items(
    path: str, items: Sequence[Any], *, min_items: int | None = None, max_items: int | None = None
) -> list[FieldError]:
    """OpenAPI ``minItems`` / ``maxItems``."""
    if max_items is not None and len(items) > max_items:
        return [too_many(path, len(items), max_items)]
    if min_items is not None and len(items) < min_items:
        return [invalid(path, len(items), f"{path} in body should have at least {min_items} items")]
    return []


def schema_properties(path: str, mapping: Mapping[str, Any], max_props: int) -> list[FieldError]:
    """OpenAPI ``maxProperties``."""
    return [too_many(path, len(mapping), max_props)] if len(mapping) > max_props else []


def schema_quantity(path: str, value: Any) -> list[FieldError]:
    """``resource.Quantity`` schema: int-or-string, strings matching the quantity pattern."""
    if value is None or isinstance(value, bool):
        return [] if value is None else [_type_error(path, "boolean")]
    if isinstance(value, float) and not value.is_integer():
        return [_type_error(path, "number")]
    if isinstance(value, str) and not is_valid_quantity(value):
        return [invalid(path, value, f"{path} in body should match '{QUANTITY_PATTERN}'")]
    return []


def _type_error(path: str, got: str) -> FieldError:
    return FieldError(path, TYPE_INVALID, got, f'{path} in body must be of type integer,string: "{got}"')


def schema_list_map(path: str, items: Sequence[Any], *keys: str) -> list[FieldError]:
    """``x-kubernetes-list-type: map``: duplicate keys are reported on the later item."""
    errs: list[FieldError] = []
    seen: set[tuple[Any, ...]] = set()
    for i, item in enumerate(items):
        values = tuple(getattr(item, _attr(name)) for name in keys)
        if values in seen:
            errs.append(duplicate(idx(path, i), list_map_key_value(dict(zip(keys, values, strict=True)))))
        seen.add(values)
    return errs


def schema_list_set(path: str, items: Sequence[str]) -> list[FieldError]:
    """``x-kubernetes-list-type: set``."""
    seen: set[str] = set()
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        if item in seen:
            errs.append(duplicate(idx(path, i), item))
        seen.add(item)
    return errs


@functools.cache  # a handful of list-map key names, looked up per item of every list map
def _attr(camel: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)


def list_map_key_value(values: Mapping[str, Any]) -> Raw:
    """A duplicate list-map key as kube-apiserver (v1.35) prints it: ``{"name":"a"}`` (JSON, keys
    sorted; older releases printed Go's ``map[string]interface {}{...}``)."""
    return Raw(json.dumps(dict(values), sort_keys=True, separators=(",", ":")))


def cel(path: str, value: Any, message: str) -> FieldError:
    """A failed ``x-kubernetes-validations`` rule.

    kube-apiserver (apiextensions-apiserver ``cel.Validator``, ``fieldErrorForReason``, since
    v1.34) prints the value the rule is attached to: a scalar as itself (``spec.clusterQueue:
    Invalid value: "b": field is immutable``), an object or a list not at all (``spec: Invalid
    value: borrowingLimit must be nil ...``): pass :data:`OMIT` for those. Older releases printed
    the schema type (``Invalid value: "object"``).
    """
    return invalid(path, value, message)


class CelEvalError(NamedTuple):
    """A CEL rule that failed to evaluate (cel-go's runtime error: ``no such key: nodeLabels`` for
    a field the object does not have, ``index out of bounds: -1``), as opposed to one that
    evaluated to false. The rules written in Python below return ``bool | CelEvalError``."""

    text: str


CelResult = bool | CelEvalError
"""What a CEL rule (or a sub-expression of one) evaluates to."""


def no_such_key(name: str) -> CelEvalError:
    """cel-go's error for selecting a field the object does not have (``self.nodeLabels`` without
    ``has()``: a CRD's absent optional fields are absent in CEL too)."""
    return CelEvalError(f"no such key: {name}")


def cel_and(*results: CelResult) -> CelResult:
    """CEL's commutative ``&&`` (and the ``all()`` macro): false if any operand is false, even
    when another failed to evaluate; else the first error; else true."""
    error: CelEvalError | None = None
    for result in results:
        if result is False:
            return False
        if isinstance(result, CelEvalError) and error is None:
            error = result
    return error if error is not None else True


def cel_rule(
    path: str, result: CelResult, message: str, schema_type: str, value: Any = OMIT
) -> list[FieldError]:
    """The error of one ``x-kubernetes-validations`` rule, as apiextensions-apiserver's
    ``cel.Validator.validateExpressions`` reports it: none when the rule holds; :func:`cel` (the
    rule's message) when it is false; and when it failed to evaluate, ``field.Invalid(fldPath,
    sts.Type, "<error> evaluating rule: <message>")``, the value shown being the schema type
    of the node the rule is on (``spec: Invalid value: "object": no such key: nodeLabels
    evaluating rule: ...``)."""
    if result is True:
        return []
    if isinstance(result, CelEvalError):
        return [invalid(path, schema_type, f"{result.text} evaluating rule: {message}")]
    return [cel(path, value, message)]


def has_written(written: Mapping[str, Any] | None, typed_present: bool, *steps: str | int) -> bool:
    """CEL's ``has()`` of the field at ``steps`` on the object as written (``written``: the
    request's object, before the typed model read it), which alone tells an explicitly empty
    value (``nodeLabels: {}``, present to CEL) from an absent one; ``typed_present``: the typed
    model's answer (its empty values read as absent, as the server stores them), taken when
    nothing was written there (a default filled it) or ``written`` is not known."""
    node: Any = written
    if node is None:
        return typed_present
    for step in steps[:-1]:
        if isinstance(step, int):
            node = node[step] if isinstance(node, list) and step < len(node) else None
        else:
            node = node.get(step) if isinstance(node, Mapping) else None
        if node is None:
            return typed_present
    return typed_present or (isinstance(node, Mapping) and steps[-1] in node)


def _schema_conditions(conditions: Sequence[Condition], path: str) -> list[FieldError]:
    errs = schema_items(path, conditions, max_items=16) + schema_list_map(path, conditions, "type")
    for i, cond in enumerate(conditions):
        if SKIP_CLEAN_CONDITIONS and _clean_condition(cond):
            continue
        p = idx(path, i)
        errs += schema_string(f"{p}.type", cond.type, max_len=316, pattern=CONDITION_TYPE_PATTERN)
        errs += (
            [required(f"{p}.status")]
            if not cond.status
            else schema_enum(f"{p}.status", cond.status, ["True", "False", "Unknown"])
        )
        errs += schema_string(
            f"{p}.reason", cond.reason, max_len=1024, min_len=1, pattern=CONDITION_REASON_PATTERN
        )
        errs += schema_string(f"{p}.message", cond.message, max_len=32768)
        errs += [required(f"{p}.lastTransitionTime")] if cond.last_transition_time == EPOCH else []
        errs += schema_minimum(f"{p}.observedGeneration", cond.observed_generation, 0)
    return errs


def _schema_metadata(obj: k.KueueObject, name_validator: Callable[[str], list[str]]) -> list[FieldError]:
    meta = obj.metadata
    errs = generate_name_errors(meta.generate_name, name_validator)
    if not meta.name and not meta.generate_name:
        errs.append(required("metadata.name", "name or generateName is required"))
    elif meta.name:
        errs += [invalid("metadata.name", meta.name, msg) for msg in name_validator(meta.name)]
    if meta.namespace:
        errs += [
            invalid("metadata.namespace", meta.namespace, msg) for msg in is_dns1123_label(meta.namespace)
        ]
    errs += validate_labels(meta.labels, "metadata.labels")
    errs += validate_annotations(meta.annotations, "metadata.annotations")
    return errs


# --- tolerations / taints (ResourceFlavor, podSetUpdates) -----------------------------------------

_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TAINT_EFFECT_MSG = "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"


def _cel_tolerations(
    path: str,
    tolerations: Sequence[k.Toleration],
    written: Mapping[str, Any] | None = None,
    *steps: str | int,
) -> list[FieldError]:
    """core/v1 Toleration's CEL rules on a toleration list (``written``/``steps``: the object as
    written and the list's place in it, for :func:`has_written`). Two rules select a field
    without ``has()``: a toleration with neither ``key`` nor ``operator``, or with
    ``tolerationSeconds`` but no ``effect``, makes them fail to evaluate (``no such key``)."""

    def has(t: k.Toleration, i: int, name: str, typed: bool) -> bool:
        return has_written(written, typed, *steps, i, name) if steps else typed

    def exists_without_key(t: k.Toleration, i: int) -> CelResult:
        if has(t, i, "key", bool(t.key)):
            return True
        return t.operator == "Exists" if has(t, i, "operator", bool(t.operator)) else no_such_key("operator")

    def no_execute_with_seconds(t: k.Toleration, i: int) -> CelResult:
        if t.toleration_seconds is None:
            return True
        return t.effect == "NoExecute" if has(t, i, "effect", bool(t.effect)) else no_such_key("effect")

    rules: list[tuple[Callable[[k.Toleration, int], CelResult], str]] = [
        (
            exists_without_key,
            "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        ),
        (
            no_execute_with_seconds,
            "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        ),
        (
            lambda t, i: not t.operator or t.operator in ("Equal", "Exists"),
            "supported toleration values: 'Equal'(default), 'Exists'",
        ),
        (
            lambda t, i: t.operator != "Exists" or not t.value,
            "a value must be empty when 'operator' is 'Exists'",
        ),
        (lambda t, i: not t.effect or t.effect in _TAINT_EFFECTS, _TAINT_EFFECT_MSG),
    ]
    errs: list[FieldError] = []
    for rule, message in rules:  # ``self.all(x, ...)``: false beats an error, as CEL's ``&&``
        errs += cel_rule(path, cel_and(*(rule(t, i) for i, t in enumerate(tolerations))), message, "array")
    return errs


def _webhook_tolerations(path: str, tolerations: Sequence[k.Toleration]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in enumerate(tolerations):
        if tol.key:
            errs += validate_label_name(tol.key, f"{idx(path, i)}.key")
    return errs


# --- ResourceFlavor -----------------------------------------------------------------------------------


def _schema_resource_flavor(
    rf: k.ResourceFlavor, old: k.ResourceFlavor | None, written: Mapping[str, Any] | None = None
) -> tuple[list[FieldError], list[FieldError]]:
    spec = rf.spec
    errs = schema_properties("spec.nodeLabels", spec.node_labels, 8)
    errs += schema_items("spec.nodeTaints", spec.node_taints, max_items=8)
    for i, taint in enumerate(spec.node_taints):
        errs += [required(f"{idx('spec.nodeTaints', i)}.key")] if not taint.key else []
        errs += [required(f"{idx('spec.nodeTaints', i)}.effect")] if not taint.effect else []
    errs += schema_items("spec.tolerations", spec.tolerations, max_items=8)
    errs += schema_reference("spec.topologyName", spec.topology_name)
    rules: list[FieldError] = []
    if spec.topology_name:  # ``!has(self.topologyName) || self.nodeLabels.size() >= 1``
        labels = has_written(written, bool(spec.node_labels), "spec", "nodeLabels")
        rules += cel_rule(
            "spec",
            len(spec.node_labels) >= 1 if labels else no_such_key("nodeLabels"),
            "at least one nodeLabel is required when topology is set",
            "object",
        )
    if old is not None and old.spec.topology_name and spec.topology_name != old.spec.topology_name:
        rules.append(cel("spec", OMIT, "topologyName is immutable when topologyName is set"))
    if not all(t.effect in _TAINT_EFFECTS for t in spec.node_taints):
        rules.append(cel("spec.nodeTaints", OMIT, _TAINT_EFFECT_MSG))
    rules += _cel_tolerations("spec.tolerations", spec.tolerations, written, "spec", "tolerations")
    return errs, rules


def _go_taint(taint: k.Taint) -> dict[str, Any]:
    """A core/v1 ``Taint`` as ``encoding/json`` writes it (``field.Error`` renders a struct bad value
    that way): struct order key, value, effect, timeAdded; empty ``value`` and nil ``timeAdded``
    omitted."""
    out: dict[str, Any] = {"key": taint.key}
    if taint.value:
        out["value"] = taint.value
    out["effect"] = taint.effect
    if taint.time_added is not None:
        out["timeAdded"] = msgspec.to_builtins(taint).get("timeAdded")
    return out


def _webhook_resource_flavor(rf: k.ResourceFlavor) -> list[FieldError]:
    spec = rf.spec
    errs = validate_labels(spec.node_labels, "spec.nodeLabels")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.node_taints):
        p = idx("spec.nodeTaints", i)
        errs += validate_label_name(taint.key, f"{p}.key")
        value_errs = is_valid_label_value(taint.value)
        errs += [invalid(f"{p}.value", taint.value, ";".join(value_errs))] if value_errs else []
        if (taint.key, taint.effect) in seen:
            errs.append(duplicate(p, _go_taint(taint), "taints must be unique by key and effect pair"))
            continue
        seen.add((taint.key, taint.effect))
    return errs + _webhook_tolerations("spec.tolerations", spec.tolerations)


# --- resource groups (ClusterQueue and Cohort) --------------------------------------------------------

FLAVORS_RESOURCES_MSG = "flavors must have the same number of resources as the coveredResources"


def _schema_resource_groups(path: str, groups: Sequence[k.ResourceGroup]) -> list[FieldError]:
    errs = schema_items(path, groups, max_items=16)
    for i, group in enumerate(groups):
        p = idx(path, i)
        errs += schema_items(f"{p}.coveredResources", group.covered_resources, min_items=1, max_items=64)
        errs += schema_items(f"{p}.flavors", group.flavors, min_items=1, max_items=64)
        errs += schema_list_map(f"{p}.flavors", group.flavors, "name")
        for j, flavor in enumerate(group.flavors):
            errs += _schema_flavor_quotas(idx(f"{p}.flavors", j), flavor)
    return errs


def _schema_flavor_quotas(path: str, flavor: k.FlavorQuotas) -> list[FieldError]:
    errs = schema_string(f"{path}.name", flavor.name, max_len=253, pattern=DNS_SUBDOMAIN_PATTERN)
    errs += schema_items(f"{path}.resources", flavor.resources, min_items=1, max_items=64)
    errs += schema_list_map(f"{path}.resources", flavor.resources, "name")
    for i, quota in enumerate(flavor.resources):
        p = idx(f"{path}.resources", i)
        errs += schema_quantity(f"{p}.nominalQuota", quota.nominal_quota)
        errs += schema_quantity(f"{p}.borrowingLimit", quota.borrowing_limit)
        errs += schema_quantity(f"{p}.lendingLimit", quota.lending_limit)
    return errs


def _cel_resource_groups(path: str, groups: Sequence[k.ResourceGroup]) -> list[FieldError]:
    return [
        cel(idx(path, i), OMIT, FLAVORS_RESOURCES_MSG)
        for i, group in enumerate(groups)
        if any(len(f.resources) != len(group.covered_resources) for f in group.flavors)
    ]


@dataclass(frozen=True)
class _LimitRules:
    has_parent: bool
    parent_word: str
    lending_within_nominal: bool


def _webhook_resource_groups(
    path: str, groups: Sequence[k.ResourceGroup], rules: _LimitRules
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(groups):
        p = idx(path, i)
        for j, name in enumerate(group.covered_resources):
            rp = idx(f"{p}.coveredResources", j)
            errs += validate_label_name(name, rp)
            errs += [duplicate(rp, name)] if name in seen_resources else []
            seen_resources.add(name)
        for j, flavor in enumerate(group.flavors):
            fp = idx(f"{p}.flavors", j)
            errs += _webhook_flavor_quotas(fp, flavor, group.covered_resources, rules)
            errs += [duplicate(f"{fp}.name", flavor.name)] if flavor.name in seen_flavors else []
            seen_flavors.add(flavor.name)
    return errs


def _webhook_flavor_quotas(
    path: str, flavor: k.FlavorQuotas, covered: Sequence[str], rules: _LimitRules
) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, quota in enumerate(flavor.resources[: len(covered)]):
        p = idx(f"{path}.resources", i)
        if quota.name != covered[i]:
            errs.append(invalid(f"{p}.name", quota.name, "must match the name in coveredResources"))
        errs += _non_negative_quantity(f"{p}.nominalQuota", quota.nominal_quota)
        if quota.borrowing_limit is not None:
            errs += _limit_needs_parent(f"{p}.borrowingLimit", quota.borrowing_limit, rules)
            errs += _non_negative_quantity(f"{p}.borrowingLimit", quota.borrowing_limit)
        if quota.lending_limit is not None:
            errs += _non_negative_quantity(f"{p}.lendingLimit", quota.lending_limit)
            errs += _limit_needs_parent(f"{p}.lendingLimit", quota.lending_limit, rules)
            if (
                rules.lending_within_nominal
                and Quantity.parse(quota.lending_limit).value > Quantity.parse(quota.nominal_quota).value
            ):
                errs.append(
                    invalid(
                        f"{p}.lendingLimit",
                        str(Quantity.parse(quota.lending_limit)),
                        "must be less than or equal to the nominalQuota",
                    )
                )
    return errs


def _non_negative_quantity(path: str, value: k.QuantityValue) -> list[FieldError]:
    q = Quantity.parse(value)
    return [invalid(path, str(q), IS_NEGATIVE_MSG)] if q.value < 0 else []


def _limit_needs_parent(path: str, value: k.QuantityValue, rules: _LimitRules) -> list[FieldError]:
    if rules.has_parent:
        return []
    return [invalid(path, str(Quantity.parse(value)), f"must be nil when {rules.parent_word} is empty")]


def _webhook_fair_sharing(path: str, fair: k.FairSharing | None) -> list[FieldError]:
    if fair is None or fair.weight is None:
        return []
    weight = Quantity.parse(fair.weight)
    errs = [invalid(path, str(weight), IS_NEGATIVE_MSG)] if weight.value < 0 else []
    if 0 < weight.value <= Fraction(1, 10**9):
        errs.append(invalid(path, str(weight), "When not 0, weight must be > 10e-9"))
    return errs


# --- ClusterQueue --------------------------------------------------------------------------------------

QUEUEING_STRATEGIES = (k.STRICT_FIFO, k.BEST_EFFORT_FIFO)
STOP_POLICIES = (k.STOP_NONE, k.STOP_HOLD, k.STOP_HOLD_AND_DRAIN)
FUNGIBILITY_POLICIES = (k.MAY_STOP_SEARCH, k.TRY_NEXT_FLAVOR)
FUNGIBILITY_PREFERENCES = (k.BORROWING_OVER_PREEMPTION, k.PREEMPTION_OVER_BORROWING)
RECLAIM_POLICIES = (k.PREEMPT_NEVER, k.PREEMPT_LOWER_PRIORITY, k.PREEMPT_ANY)
WITHIN_CQ_POLICIES = (k.PREEMPT_NEVER, k.PREEMPT_LOWER_PRIORITY, k.PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY)
BORROW_WITHIN_COHORT_POLICIES = (k.PREEMPT_NEVER, k.PREEMPT_LOWER_PRIORITY)
ADMISSION_MODES = ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing")
PREEMPTION_RULE_MSG = "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
PREFERENCE_CEL_MSG = "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"
BORROWING_LIMIT_CEL_MSG = "borrowingLimit must be nil when cohort is empty"
MAX_TOTAL_FLAVORS = 256
MAX_TOTAL_RESOURCES = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS = 512


def _schema_cluster_queue(
    cq: k.ClusterQueue, old: k.ClusterQueue | None
) -> tuple[list[FieldError], list[FieldError]]:
    spec = cq.spec
    errs = _schema_resource_groups("spec.resourceGroups", spec.resource_groups)
    errs += schema_reference("spec.cohortName", spec.cohort_name)
    errs += schema_enum("spec.queueingStrategy", spec.queueing_strategy, QUEUEING_STRATEGIES)
    errs += _schema_fungibility(spec.flavor_fungibility)
    errs += _schema_preemption(spec.preemption)
    errs += _schema_admission_checks_strategy(spec.admission_checks_strategy)
    errs += schema_enum("spec.stopPolicy", spec.stop_policy, STOP_POLICIES)
    errs += schema_quantity(
        "spec.fairSharing.weight", spec.fair_sharing.weight if spec.fair_sharing else None
    )
    if spec.admission_scope is not None:
        mode = spec.admission_scope.admission_mode
        errs += (
            [required("spec.admissionScope.admissionMode")]
            if not mode
            else schema_enum("spec.admissionScope.admissionMode", mode, ADMISSION_MODES)
        )
    if cq.status is not None:
        errs += _schema_conditions(cq.status.conditions, "status.conditions")
        errs += _schema_flavor_usage("status.flavorsReservation", cq.status.flavors_reservation)
        errs += _schema_flavor_usage("status.flavorsUsage", cq.status.flavors_usage)
    return errs, _cel_cluster_queue(spec)


def _schema_fungibility(value: k.FlavorFungibility | None) -> list[FieldError]:
    if value is None:
        return []
    path = "spec.flavorFungibility"
    errs = schema_enum(f"{path}.whenCanBorrow", value.when_can_borrow, FUNGIBILITY_POLICIES)
    errs += schema_enum(f"{path}.whenCanPreempt", value.when_can_preempt, FUNGIBILITY_POLICIES)
    return errs + schema_enum(f"{path}.preference", value.preference, FUNGIBILITY_PREFERENCES)


def _schema_preemption(value: k.ClusterQueuePreemption | None) -> list[FieldError]:
    if value is None:
        return []
    path = "spec.preemption"
    errs = schema_enum(f"{path}.reclaimWithinCohort", value.reclaim_within_cohort, RECLAIM_POLICIES)
    if value.borrow_within_cohort is not None:
        errs += schema_enum(
            f"{path}.borrowWithinCohort.policy",
            value.borrow_within_cohort.policy,
            BORROW_WITHIN_COHORT_POLICIES,
        )
    return errs + schema_enum(f"{path}.withinClusterQueue", value.within_cluster_queue, WITHIN_CQ_POLICIES)


def _schema_admission_checks_strategy(value: k.AdmissionChecksStrategy | None) -> list[FieldError]:
    if value is None:
        return []
    path = "spec.admissionChecksStrategy.admissionChecks"
    errs = schema_items(path, value.admission_checks, min_items=1, max_items=64)
    errs += schema_list_map(path, value.admission_checks, "name")
    for i, rule in enumerate(value.admission_checks):
        p = idx(path, i)
        errs += schema_string(f"{p}.name", rule.name, max_len=316, min_len=1)
        errs += schema_items(f"{p}.onFlavors", rule.on_flavors, max_items=64)
        errs += schema_list_set(f"{p}.onFlavors", rule.on_flavors)
        for j, flavor in enumerate(rule.on_flavors):
            errs += schema_string(
                idx(f"{p}.onFlavors", j), flavor, max_len=253, pattern=DNS_SUBDOMAIN_PATTERN
            )
    return errs


def _cel_cluster_queue(spec: k.ClusterQueueSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    if not spec.cohort_name and any(
        r.borrowing_limit is not None for g in spec.resource_groups for f in g.flavors for r in f.resources
    ):
        errs.append(cel("spec", OMIT, BORROWING_LIMIT_CEL_MSG))
    errs += _cel_resource_groups("spec.resourceGroups", spec.resource_groups)
    fungibility = spec.flavor_fungibility
    if (
        fungibility is not None
        and fungibility.preference
        and not (
            fungibility.when_can_borrow == k.TRY_NEXT_FLAVOR
            and fungibility.when_can_preempt == k.TRY_NEXT_FLAVOR
        )
    ):
        errs.append(cel("spec.flavorFungibility", OMIT, PREFERENCE_CEL_MSG))
    if _preemption_rule_broken(spec.preemption):
        errs.append(cel("spec.preemption", OMIT, PREEMPTION_RULE_MSG))
    return errs


def _preemption_rule_broken(value: k.ClusterQueuePreemption | None) -> bool:
    return (
        value is not None
        and value.reclaim_within_cohort == k.PREEMPT_NEVER
        and value.borrow_within_cohort is not None
        and value.borrow_within_cohort.policy != k.PREEMPT_NEVER
    )


def _webhook_cluster_queue(
    cq: k.ClusterQueue, old: k.ClusterQueue | None, gates: FeatureGates
) -> list[FieldError]:
    spec = cq.spec
    rules = _LimitRules(has_parent=bool(spec.cohort_name), parent_word="cohort", lending_within_nominal=True)
    errs = _webhook_resource_groups("spec.resourceGroups", spec.resource_groups, rules)
    errs += validate_label_selector(spec.namespace_selector, "spec.namespaceSelector")
    if _preemption_rule_broken(spec.preemption):
        errs.append(invalid("spec.preemption", spec.preemption, PREEMPTION_RULE_MSG))
    fungibility = spec.flavor_fungibility
    if (
        fungibility is not None
        and fungibility.preference
        and not (
            fungibility.when_can_borrow == k.TRY_NEXT_FLAVOR
            and fungibility.when_can_preempt == k.TRY_NEXT_FLAVOR
        )
    ):
        detail = f'preference "{fungibility.preference}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor'
        errs.append(invalid("spec.flavorFungibility.preference", fungibility.preference, detail))
    errs += _webhook_fair_sharing("spec.fairSharing", spec.fair_sharing)
    errs += _webhook_totals(spec.resource_groups)
    if gates.enabled("ConcurrentAdmission"):
        errs += _webhook_concurrent_admission(spec)
    errs += _webhook_on_flavors(cq, old, gates)
    if old is not None and spec.concurrent_admission_policy != old.spec.concurrent_admission_policy:
        policy = go_value(spec.concurrent_admission_policy, "*ConcurrentAdmissionPolicy")
        errs.append(invalid("spec.concurrentAdmissionPolicy", policy, FIELD_IMMUTABLE_MSG))
    return errs


def _webhook_totals(groups: Sequence[k.ResourceGroup]) -> list[FieldError]:
    path = "spec.resourceGroups"
    errs: list[FieldError] = []
    flavors = sum(len(g.flavors) for g in groups)
    if flavors > MAX_TOTAL_FLAVORS:
        errs.append(
            invalid(
                path,
                flavors,
                f"total number of flavors across all resourceGroups must be ≤ 256, got {flavors}",
            )
        )
    resources = sum(len(g.covered_resources) for g in groups)
    if resources > MAX_TOTAL_RESOURCES:
        errs.append(
            invalid(
                path,
                resources,
                f"total number of covered resources across all resourceGroups must be ≤ 256, got {resources}",
            )
        )
    for i, group in enumerate(groups):
        combinations = sum(len(f.resources) for f in group.flavors)
        if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            errs.append(
                invalid(
                    idx(path, i),
                    combinations,
                    f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {combinations}",
                )
            )
    return errs


CONCURRENT_ADMISSION_TRY_PREFERRED = "TryPreferredFlavors"
MAX_CONCURRENT_ADMISSION_FLAVORS = 16


def _webhook_concurrent_admission(spec: k.ClusterQueueSpec) -> list[FieldError]:
    """Upstream ``clusterqueue_webhook.go`` ``validateConcurrentAdmissionPolicy`` (gate
    ``ConcurrentAdmission``; the policy is kept as its JSON map)."""
    policy = spec.concurrent_admission_policy
    if policy is None:
        return []
    errs: list[FieldError] = []
    groups = spec.resource_groups
    if len(groups) != 1:
        errs.append(
            invalid(
                "spec.resourceGroups",
                len(groups),
                "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    if len(groups) == 1 and len(groups[0].flavors) > MAX_CONCURRENT_ADMISSION_FLAVORS:
        errs.append(
            invalid(
                "spec.resourceGroups[0].flavors",
                len(groups[0].flavors),
                "cannot have more than 16 resource flavors in the ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    migration = policy.get("migration")
    migration = migration if isinstance(migration, Mapping) else {}
    constraints = migration.get("constraints")
    if isinstance(constraints, Mapping):
        mode = migration.get("mode") or ""
        path = "spec.concurrentAdmissionPolicy.migration.constraints"
        last = constraints.get("lastAcceptableFlavorName")
        if mode and mode != CONCURRENT_ADMISSION_TRY_PREFERRED:
            errs.append(
                forbidden(
                    path,
                    f'may only be set when migration.mode is "{CONCURRENT_ADMISSION_TRY_PREFERRED}" (got "{mode}")',
                )
            )
        elif isinstance(last, str) and last not in (valid := _all_flavors(groups)):
            # Go prints ``validFlavors.UnsortedList()`` with %v (a set's order); sorted here.
            errs.append(
                invalid(
                    f"{path}.lastAcceptableFlavorName",
                    last,
                    f"must be one of the flavors defined in the ClusterQueue: [{' '.join(sorted(valid))}]",
                )
            )
    if spec.queueing_strategy == k.STRICT_FIFO:
        errs.append(
            invalid(
                "spec.queueingStrategy",
                spec.queueing_strategy,
                "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined",
            )
        )
    return errs


def _all_flavors(groups: Sequence[k.ResourceGroup]) -> set[str]:
    return {f.name for g in groups for f in g.flavors}


def _webhook_on_flavors(
    cq: k.ClusterQueue, old: k.ClusterQueue | None, gates: FeatureGates
) -> list[FieldError]:
    strategy = cq.spec.admission_checks_strategy
    if strategy is None:
        return []
    valid = _all_flavors(cq.spec.resource_groups)
    tolerated = _tolerated_on_flavors(cq, old, gates, valid)
    errs: list[FieldError] = []
    for i, rule in enumerate(strategy.admission_checks):
        if tolerated.get(rule.name) == set(rule.on_flavors):
            continue
        path = f"{idx('spec.admissionChecksStrategy.admissionChecks', i)}.onFlavors"
        errs += [
            not_supported(idx(path, j), f, sorted(valid))
            for j, f in enumerate(rule.on_flavors)
            if f not in valid
        ]
    return errs


def _tolerated_on_flavors(
    cq: k.ClusterQueue, old: k.ClusterQueue | None, gates: FeatureGates, valid: set[str]
) -> dict[str, set[str]]:
    """Rules left unvalidated on update (legacy objects, gate ``RejectUpdatesToCQWithInvalidOnFlavors`` off)."""
    if old is None or gates.enabled("RejectUpdatesToCQWithInvalidOnFlavors"):
        return {}
    strategy = old.spec.admission_checks_strategy
    if strategy is None or _all_flavors(old.spec.resource_groups) != valid:
        return {}
    return {rule.name: set(rule.on_flavors) for rule in strategy.admission_checks}


# --- Cohort -------------------------------------------------------------------------------------------


def _schema_cohort(cohort: k.Cohort, old: k.Cohort | None) -> tuple[list[FieldError], list[FieldError]]:
    spec = cohort.spec
    errs = schema_reference("spec.parentName", spec.parent_name)
    errs += _schema_resource_groups("spec.resourceGroups", spec.resource_groups)
    errs += schema_quantity(
        "spec.fairSharing.weight", spec.fair_sharing.weight if spec.fair_sharing else None
    )
    return errs, _cel_resource_groups("spec.resourceGroups", spec.resource_groups)


def _webhook_cohort(cohort: k.Cohort) -> list[FieldError]:
    spec = cohort.spec
    rules = _LimitRules(has_parent=bool(spec.parent_name), parent_word="parent", lending_within_nominal=False)
    errs = _webhook_resource_groups("spec.resourceGroups", spec.resource_groups, rules)
    return errs + _webhook_fair_sharing("spec.fairSharing", spec.fair_sharing)


# --- LocalQueue ----------------------------------------------------------------------------------------


def _schema_local_queue(
    lq: k.LocalQueue, old: k.LocalQueue | None
) -> tuple[list[FieldError], list[FieldError]]:
    spec = lq.spec
    errs = schema_reference("spec.clusterQueue", spec.cluster_queue)
    errs += schema_enum("spec.stopPolicy", spec.stop_policy, STOP_POLICIES)
    errs += schema_quantity(
        "spec.fairSharing.weight", spec.fair_sharing.weight if spec.fair_sharing else None
    )
    if lq.status is not None:
        errs += _schema_conditions(lq.status.conditions, "status.conditions")
        errs += _schema_flavor_usage("status.flavorsReservation", lq.status.flavors_reservation)
        errs += _schema_flavor_usage("status.flavorsUsage", lq.status.flavors_usage)
    rules: list[FieldError] = []
    if (
        old is not None
        and old.spec.cluster_queue
        and spec.cluster_queue
        and old.spec.cluster_queue != spec.cluster_queue
    ):
        rules.append(cel("spec.clusterQueue", spec.cluster_queue, FIELD_IMMUTABLE_MSG))
    return errs, rules


MAX_USAGE_FLAVORS = 64
MAX_USAGE_FLAVOR_RESOURCES = 64


def _schema_flavor_usage(
    path: str, usages: Sequence[k.LocalQueueFlavorUsage | k.FlavorUsage]
) -> list[FieldError]:
    """A status's ``flavorsReservation`` / ``flavorsUsage`` (upstream's
    ``apis/kueue/v1beta2/localqueue_types.go`` ``LocalQueueFlavorUsage`` and
    ``clusterqueue_types.go`` ``FlavorUsage``: ``MaxItems=64`` lists, each flavor a
    ``ResourceFlavorReference`` with at most 64 resources and their quantities, both lists
    ``listType=map`` by name)."""
    if not usages or _flavor_usage_ok(usages):  # the usual case, checked without building paths
        return []
    errs = schema_items(path, usages, max_items=MAX_USAGE_FLAVORS)
    for i, usage in enumerate(usages):
        p = idx(path, i)
        errs += schema_reference(f"{p}.name", usage.name)
        errs += schema_items(f"{p}.resources", usage.resources, max_items=MAX_USAGE_FLAVOR_RESOURCES)
        resources: Sequence[k.LocalQueueResourceUsage | k.ResourceUsage] = usage.resources
        for j, resource in enumerate(resources):
            rp = idx(f"{p}.resources", j)
            errs += schema_quantity(f"{rp}.total", resource.total)
            if isinstance(resource, k.ResourceUsage):
                errs += schema_quantity(f"{rp}.borrowed", resource.borrowed)
        errs += schema_list_map(f"{p}.resources", usage.resources, "name")
    return errs + schema_list_map(path, usages, "name")


def _flavor_usage_ok(usages: Sequence[k.LocalQueueFlavorUsage | k.FlavorUsage]) -> bool:
    """Whether :func:`_schema_flavor_usage` finds nothing (status writes are frequent)."""
    if len(usages) > MAX_USAGE_FLAVORS or len({u.name for u in usages}) != len(usages):
        return False
    for usage in usages:
        resources: Sequence[k.LocalQueueResourceUsage | k.ResourceUsage] = usage.resources
        if (
            not _reference_ok(usage.name)
            or len(resources) > MAX_USAGE_FLAVOR_RESOURCES
            or len({r.name for r in resources}) != len(resources)
        ):
            return False
        for resource in resources:
            if not _quantity_ok(resource.total) or (
                isinstance(resource, k.ResourceUsage) and not _quantity_ok(resource.borrowed)
            ):
                return False
    return True


@functools.lru_cache(maxsize=4096)
def _reference_ok(name: str) -> bool:
    return not schema_reference("", name)


def _quantity_ok(value: Any) -> bool:
    if type(value) is str:
        return _quantity_str_ok(value)
    return not schema_quantity("", value)


@functools.lru_cache(maxsize=4096)
def _quantity_str_ok(value: str) -> bool:
    return not schema_quantity("", value)


# --- Workload: schema -----------------------------------------------------------------------------------

MAX_POD_SETS = 18
PRIORITY_GROUPS = ("kueue.x-k8s.io", "scheduling.k8s.io")
PRIORITY_KINDS = ("WorkloadPriorityClass", "PriorityClass")
CHECK_STATES = (k.CHECK_PENDING, k.CHECK_READY, k.CHECK_RETRY, k.CHECK_REJECTED)
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"


def has_quota_reservation(wl: k.Workload) -> bool:
    """``QuotaReserved=True``."""
    return is_condition_true(wl.status.conditions, QUOTA_RESERVED)


def _schema_workload(
    wl: k.Workload, old: k.Workload | None, written: Mapping[str, Any] | None = None
) -> tuple[list[FieldError], list[FieldError]]:
    errs = _schema_workload_spec(wl.spec) + _schema_workload_status(wl.status)
    return errs, _cel_workload(wl, old, written)


REMEMBER_SPEC_ERRORS = True
"""Whether the errors of a Workload spec's own rules (its CRD schema rules here, the webhook's
pod-set rules below) are remembered per spec. Kept as a flag so the tests can compare with the
rules run every time."""

_SPEC_MEMO_LIMIT = 4096
_REMEMBERED_SPEC_MAX_BYTES = 64 * 1024
"""Specs (and pod templates) larger than this are checked every time: a memo bounded in entries
alone would keep up to 4,096 request bodies of up to 3 MiB each; one of the API's Workloads is
a few KiB."""
_spec_schema_memo: dict[bytes, tuple[FieldError, ...]] = {}
_spec_webhook_memo: dict[tuple[bytes, tuple[bool, ...]], tuple[FieldError, ...]] = {}


def _spec_key(spec: k.WorkloadSpec) -> bytes | None:
    """The spec's identity for the memos: a 128-bit BLAKE2b digest of its msgpack encoding (C
    speed); None when msgpack cannot encode it (an integer beyond 64 bits) or it is larger than
    :data:`_REMEMBERED_SPEC_MAX_BYTES`: the rules then run unremembered. Equal encodings are
    specs whose rules give the same errors: the typed members have their declared types, and
    the pod templates are JSON trees (as the API decodes them, and manifests load them: an
    explicit YAML ``!!timestamp`` becomes its string), whose scalars msgpack keeps apart by type
    (integers, floats including NaN, booleans, strings, bytes, null)."""
    try:
        encoded = msgspec.msgpack.encode(spec)
    except (OverflowError, TypeError, msgspec.EncodeError):
        return None
    if len(encoded) > _REMEMBERED_SPEC_MAX_BYTES:
        return None
    return hashlib.blake2b(encoded, digest_size=16).digest()


def _remember(memo: dict[Any, tuple[FieldError, ...]], key: Any, errs: list[FieldError]) -> None:
    if len(memo) >= _SPEC_MEMO_LIMIT:
        memo.clear()
    memo[key] = tuple(errs)


def _schema_workload_spec(spec: k.WorkloadSpec) -> list[FieldError]:
    """The CRD schema rules of the spec, remembered per spec (:data:`REMEMBER_SPEC_ERRORS`): they
    read the spec alone, and every status write of a Workload (the admission, ``Finished``) ran
    them again on the spec its create checked; the Workloads of one kind of Job share theirs."""
    key = _spec_key(spec) if REMEMBER_SPEC_ERRORS else None
    if key is None:
        return _schema_workload_spec_rules(spec)
    hit = _spec_schema_memo.get(key)
    if hit is None:
        errs = _schema_workload_spec_rules(spec)
        _remember(_spec_schema_memo, key, errs)
        return errs
    return list(hit)


def _schema_workload_spec_rules(spec: k.WorkloadSpec) -> list[FieldError]:
    errs = schema_items("spec.podSets", spec.pod_sets, min_items=1, max_items=MAX_POD_SETS)
    errs += schema_list_map("spec.podSets", spec.pod_sets, "name")
    for i, pod_set in enumerate(spec.pod_sets):
        p = idx("spec.podSets", i)
        errs += schema_string(f"{p}.name", pod_set.name, max_len=63, pattern=DNS_LABEL_PATTERN)
        errs += schema_minimum(f"{p}.count", pod_set.count, 0)
        errs += schema_minimum(f"{p}.minCount", pod_set.min_count, 1)
        errs += _schema_pod_template(f"{p}.template", pod_set.template)
        if pod_set.topology_request is not None:
            errs += _schema_topology_request(f"{p}.topologyRequest", pod_set.topology_request)
    errs += schema_reference("spec.queueName", spec.queue_name)
    ref = spec.priority_class_ref
    if ref is not None:
        errs += (
            [required("spec.priorityClassRef.group")]
            if not ref.group
            else schema_enum("spec.priorityClassRef.group", ref.group, PRIORITY_GROUPS)
        )
        errs += (
            [required("spec.priorityClassRef.kind")]
            if not ref.kind
            else schema_enum("spec.priorityClassRef.kind", ref.kind, PRIORITY_KINDS)
        )
        errs += schema_string(
            "spec.priorityClassRef.name", ref.name, max_len=253, min_len=1, pattern=DNS_SUBDOMAIN_PATTERN
        )
    errs += schema_minimum("spec.maximumExecutionTimeSeconds", spec.maximum_execution_time_seconds, 1)
    errs += schema_items("spec.preemptionGates", spec.preemption_gates, max_items=8)
    errs += schema_list_map("spec.preemptionGates", spec.preemption_gates, "name")
    for i, gate in enumerate(spec.preemption_gates):
        errs += schema_string(f"{idx('spec.preemptionGates', i)}.name", gate.name, max_len=63, min_len=1)
    return errs


_TOPOLOGY_REQUEST_STRINGS: Final = (
    ("required", 63),
    ("preferred", 63),
    ("podIndexLabel", 317),
    ("subGroupIndexLabel", 317),
    ("podSetGroupName", 256),
    ("podSetSliceRequiredTopology", 63),
)


def _schema_topology_request(path: str, request: Mapping[str, Any]) -> list[FieldError]:
    """The OpenAPI bounds of ``PodSetTopologyRequest`` (upstream's Workload CRD: string
    ``maxLength``, ``minimum`` 0 of ``subGroupCount``, 1 of the slice sizes, at most 3 slice
    constraints, each with a non-empty ``topology``). The request is kept as its JSON map."""
    errs: list[FieldError] = []
    for name, max_len in _TOPOLOGY_REQUEST_STRINGS:
        value = request.get(name)
        if isinstance(value, str):
            errs += schema_string(f"{path}.{name}", value, max_len=max_len)
    errs += _schema_int_minimum(f"{path}.subGroupCount", request.get("subGroupCount"), 0)
    errs += _schema_int_minimum(f"{path}.podSetSliceSize", request.get("podSetSliceSize"), 1)
    constraints = request.get("podsetSliceRequiredTopologyConstraints")
    if isinstance(constraints, list):
        cpath = f"{path}.podsetSliceRequiredTopologyConstraints"
        errs += schema_items(cpath, constraints, max_items=3)
        for i, constraint in enumerate(constraints):
            if not isinstance(constraint, Mapping):
                continue
            topology = constraint.get("topology")
            if isinstance(topology, str):
                errs += schema_string(f"{idx(cpath, i)}.topology", topology, max_len=63, min_len=1)
            errs += _schema_int_minimum(f"{idx(cpath, i)}.size", constraint.get("size"), 1)
    return errs


def _schema_int_minimum(path: str, value: Any, minimum: int) -> list[FieldError]:
    """:func:`schema_minimum` of an untyped JSON value (only integers are compared)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return schema_minimum(path, value, minimum)
    return []


def _schema_pod_template(path: str, template: k.PodTemplateSpec) -> list[FieldError]:
    """The OpenAPI rules of the embedded core/v1 PodTemplateSpec (required fields, list-map keys,
    quantities, ...) as kube-apiserver applies the Workload CRD's schema: that very schema is used."""
    encoded = msgspec.json.encode(template)
    if len(encoded) > _REMEMBERED_SPEC_MAX_BYTES:
        return list(_pod_template_errors.__wrapped__(path, encoded))
    return list(_pod_template_errors(path, encoded))


@functools.lru_cache(maxsize=1024)
def _pod_template_errors(path: str, encoded: bytes) -> tuple[FieldError, ...]:
    """Memoised by content: the Workloads of one kind of Job share their templates, and the walk
    over the core/v1 schema costs about as much as the rest of a Workload's validation."""
    # imported here: the schema modules build on this one
    from pykueue.apiserver.builtin.schema import validate as validate_openapi
    from pykueue.apiserver.crdgen import pod_template_schema

    return tuple(validate_openapi(msgspec.json.decode(encoded), pod_template_schema(), path))


def _pod_resources(path: str, pod_spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(path, resources)`` of every initContainer, container and the pod-level resources."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for kind in ("initContainers", "containers"):
        containers = pod_spec.get(kind)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if isinstance(resources, Mapping):
                found.append((f"{idx(f'{path}.{kind}', i)}.resources", resources))
    if isinstance(pod_spec.get("resources"), Mapping):
        found.append((f"{path}.resources", pod_spec["resources"]))
    return found


def _schema_workload_status(status: k.WorkloadStatus) -> list[FieldError]:
    errs = _schema_conditions(status.conditions, "status.conditions")
    if status.admission is not None:
        errs += _schema_admission(status.admission)
    if status.requeue_state is not None:
        errs += schema_minimum("status.requeueState.count", status.requeue_state.count, 0)
    errs += schema_items("status.reclaimablePods", status.reclaimable_pods, max_items=MAX_POD_SETS)
    errs += schema_list_map("status.reclaimablePods", status.reclaimable_pods, "name")
    for i, rp in enumerate(status.reclaimable_pods):
        rp_path = idx("status.reclaimablePods", i)
        errs += schema_string(f"{rp_path}.name", rp.name, max_len=63, pattern=DNS_LABEL_PATTERN)
        errs += schema_minimum(f"{rp_path}.count", rp.count, 0)
    errs += _schema_check_states(status.admission_checks)
    errs += schema_items("status.resourceRequests", status.resource_requests, max_items=MAX_POD_SETS)
    errs += schema_list_map("status.resourceRequests", status.resource_requests, "name")
    for i, request in enumerate(status.resource_requests):
        errs += schema_string(
            f"{idx('status.resourceRequests', i)}.name", request.name, max_len=63, pattern=DNS_LABEL_PATTERN
        )
    if status.scheduling_stats is not None:
        evictions = status.scheduling_stats.evictions
        errs += schema_items("status.schedulingStats.evictions", evictions, max_items=256)
        errs += schema_list_map("status.schedulingStats.evictions", evictions, "reason", "underlyingCause")
    seen_gates: set[Any] = set()
    for i, gate in enumerate(status.preemption_gates):
        # ``x-kubernetes-list-type: map`` keyed by name (the items are kept as untyped maps).
        name = gate.get("name") if isinstance(gate, Mapping) else None
        if isinstance(name, str):
            if name in seen_gates:
                errs.append(duplicate(idx("status.preemptionGates", i), list_map_key_value({"name": name})))
            seen_gates.add(name)
    errs += schema_items("status.nominatedClusterNames", status.nominated_cluster_names, max_items=20)
    for i, name in enumerate(status.nominated_cluster_names):
        errs += schema_string(idx("status.nominatedClusterNames", i), name, max_len=256)
    if status.cluster_name is not None:
        errs += schema_string("status.clusterName", status.cluster_name, max_len=256)
    return errs + schema_items("status.unhealthyNodes", status.unhealthy_nodes, max_items=8)


def _schema_admission(admission: k.Admission) -> list[FieldError]:
    path = "status.admission.podSetAssignments"
    errs = schema_reference("status.admission.clusterQueue", admission.cluster_queue)
    errs += schema_items(path, admission.pod_set_assignments, max_items=MAX_POD_SETS)
    errs += schema_list_map(path, admission.pod_set_assignments, "name")
    for i, psa in enumerate(admission.pod_set_assignments):
        p = idx(path, i)
        errs += schema_string(f"{p}.name", psa.name, max_len=63, pattern=DNS_LABEL_PATTERN)
        errs += schema_minimum(f"{p}.count", psa.count, 0)
        for resource, flavor in psa.flavors.items():
            errs += schema_string(
                schema_key(f"{p}.flavors", resource), flavor, max_len=253, pattern=DNS_SUBDOMAIN_PATTERN
            )
        errs += schema_enum(
            f"{p}.delayedTopologyRequest", psa.delayed_topology_request or "", ("Pending", "Ready")
        )
        for name, value in psa.resource_usage.items():
            errs += schema_quantity(schema_key(f"{p}.resourceUsage", name), value)
    return errs


def _schema_check_states(states: Sequence[k.AdmissionCheckState]) -> list[FieldError]:
    path = "status.admissionChecks"
    errs = schema_items(path, states, max_items=8) + schema_list_map(path, states, "name")
    for i, state in enumerate(states):
        p = idx(path, i)
        errs += schema_string(f"{p}.name", state.name, max_len=316, min_len=1)
        errs += (
            [required(f"{p}.state")]
            if not state.state
            else schema_enum(f"{p}.state", state.state, CHECK_STATES)
        )
        errs += schema_string(f"{p}.message", state.message, max_len=32768)
        errs += schema_minimum(f"{p}.requeueAfterSeconds", state.requeue_after_seconds, 0)
        errs += schema_minimum(f"{p}.retryCount", state.retry_count, 0)
        errs += schema_items(f"{p}.podSetUpdates", state.pod_set_updates, max_items=MAX_POD_SETS)
        for j, update in enumerate(state.pod_set_updates):
            up = idx(f"{p}.podSetUpdates", j)
            errs += schema_string(f"{up}.name", update.name, max_len=63, pattern=DNS_LABEL_PATTERN)
            errs += schema_items(f"{up}.tolerations", update.tolerations, max_items=8)
    return errs


def _cel_workload(
    wl: k.Workload, old: k.Workload | None, written: Mapping[str, Any] | None = None
) -> list[FieldError]:
    spec = wl.spec
    errs: list[FieldError] = []
    admission = wl.status.admission
    if has_quota_reservation(wl) and admission is not None:
        # ``size(self.spec.podSets) == size(self.status.admission.podSetAssignments)``
        assignments = admission.pod_set_assignments
        if not has_written(written, bool(spec.pod_sets), "spec", "podSets"):
            result: CelResult = no_such_key("podSets")
        elif not has_written(written, bool(assignments), "status", "admission", "podSetAssignments"):
            result = no_such_key("podSetAssignments")
        else:
            result = len(spec.pod_sets) == len(assignments)
        errs += cel_rule(ROOT_PATH, result, _wl_rule("", "podSetAssignments must have"), "object")
    if old is not None:
        errs += _cel_workload_update(wl, old)
    if spec.priority_class_ref is not None and spec.priority is None:
        errs.append(cel("spec", OMIT, _wl_rule("spec", "priority should not be nil")))
    errs += _cel_priority_class_ref(spec.priority_class_ref)
    for i, pod_set in enumerate(spec.pod_sets):
        if pod_set.min_count is not None and pod_set.min_count > pod_set.count:
            errs.append(
                cel(
                    idx("spec.podSets", i), OMIT, _wl_rule("spec.podSets[]", "minCount should be positive")
                )
            )
    errs += _cel_workload_status(wl, old)
    for i, state in enumerate(wl.status.admission_checks):
        for j, update in enumerate(state.pod_set_updates):
            state_path = idx("status.admissionChecks", i)
            path = f"{idx(f'{state_path}.podSetUpdates', j)}.tolerations"
            steps = ("status", "admissionChecks", i, "podSetUpdates", j, "tolerations")
            errs += _cel_tolerations(path, update.tolerations, written, *steps)
    return errs


def _wl_rule(path: str, starts: str) -> str:
    """The message of Workload's CEL rule at ``path`` (the CRDs' rule table is the one source)."""
    return celrules.message("Workload", path, starts)


def _cel_priority_class_ref(ref: k.PriorityClassRef | None) -> list[FieldError]:
    if ref is None:
        return []
    path = "spec.priorityClassRef"
    errs: list[FieldError] = []
    if ref.group == "scheduling.k8s.io" and ref.kind != "PriorityClass":
        errs.append(
            cel(path, OMIT, _wl_rule("spec.priorityClassRef", "only the PriorityClass kind"))
        )
    if ref.group == "kueue.x-k8s.io" and ref.kind != "WorkloadPriorityClass":
        errs.append(
            cel(path, OMIT, _wl_rule("spec.priorityClassRef", "only the WorkloadPriorityClass kind"))
        )
    return errs


def _cel_workload_update(wl: k.Workload, old: k.Workload) -> list[FieldError]:
    errs: list[FieldError] = []
    if has_quota_reservation(old):
        errs += _cel_priority_ref_update(wl.spec.priority_class_ref, old.spec.priority_class_ref)
        # Upstream's rule: with quota reserved before and after, queueName may be neither set,
        # removed nor changed (has(old) == has(new) and equal when present).
        if has_quota_reservation(wl) and (
            bool(old.spec.queue_name) != bool(wl.spec.queue_name)
            or (old.spec.queue_name and old.spec.queue_name != wl.spec.queue_name)
        ):
            errs.append(cel(ROOT_PATH, OMIT, _wl_rule("", "queueName is immutable")))
    both_admitted = is_condition_true(old.status.conditions, ADMITTED) and is_condition_true(
        wl.status.conditions, ADMITTED
    )
    if both_admitted and (old.spec.maximum_execution_time_seconds or 0) != (
        wl.spec.maximum_execution_time_seconds or 0
    ):
        errs.append(
            cel(ROOT_PATH, OMIT, _wl_rule("", "maximumExecutionTimeSeconds is immutable"))
        )
    return errs


def _cel_priority_ref_update(
    new: k.PriorityClassRef | None, old: k.PriorityClassRef | None
) -> list[FieldError]:
    if (new is None) != (old is None):
        return [cel(ROOT_PATH, OMIT, _wl_rule("", "priorityClassRef is immutable"))]
    if new is None or old is None:
        return []
    errs: list[FieldError] = []
    if new.group != old.group:
        errs.append(
            cel(ROOT_PATH, OMIT, _wl_rule("", "priorityClassRef.group is immutable"))
        )
    if new.kind != old.kind:
        errs.append(
            cel(ROOT_PATH, OMIT, _wl_rule("", "priorityClassRef.kind is immutable"))
        )
    if new.group == "scheduling.k8s.io" and new.kind == "PriorityClass" and new.name != old.name:
        errs.append(
            cel(
                ROOT_PATH,
                OMIT,
                _wl_rule("", "priorityClassRef.name is immutable"),
            )
        )
    return errs


def _cel_workload_status(wl: k.Workload, old: k.Workload | None) -> list[FieldError]:
    status = wl.status
    errs: list[FieldError] = []
    if (
        old is not None
        and old.status.cluster_name is not None
        and status.cluster_name is not None
        and (old.status.cluster_name != status.cluster_name)
    ):
        errs.append(cel("status", OMIT, _wl_rule("status", "clusterName is immutable")))
    if status.cluster_name is not None and status.nominated_cluster_names:
        errs.append(cel("status", OMIT, _wl_rule("status", "clusterName and nominatedClusterNames")))
    return errs


# --- Workload: webhook ----------------------------------------------------------------------------------

ADMISSION_GATED_BY_PATH = key("metadata.annotations", k.ADMISSION_GATED_BY_ANNOTATION)
PRIORITY_BOOST_PATH = key("metadata.annotations", k.PRIORITY_BOOST_ANNOTATION)
MAX_GATE_NAME_LENGTH = 63


def _webhook_workload(wl: k.Workload, old: k.Workload | None, gates: FeatureGates) -> list[FieldError]:
    errs = _webhook_workload_spec(wl.spec, gates)
    variable = sum(1 for ps in wl.spec.pod_sets if ps.min_count is not None)
    if variable and is_elastic_workload(wl, gates):
        errs.append(
            invalid("spec.podSets", variable, "partial admission and elastic job cannot be used together")
        )
    if has_quota_reservation(wl):
        errs += _webhook_admission(wl, old)
    errs += validate_conditions(wl.status.conditions, "status.conditions")
    errs += _webhook_reclaimable_pods(wl, old, gates)
    errs += _webhook_check_states(wl)
    errs += _webhook_workload_annotations(wl, gates)
    if old is not None:
        errs += _webhook_workload_update(wl, old, gates)
    return errs


POD_SET_GATES = (
    "WorkloadValidationForPodSetMetadata",
    "WorkloadValidateResourcesAreNonNegative",
    "TASValidateWorkloadSliceSize",
)
"""The feature gates the webhook's spec rules (:func:`_webhook_workload_spec_rules`) read: with
the spec, the key of their memo."""


def _webhook_workload_spec(spec: k.WorkloadSpec, gates: FeatureGates) -> list[FieldError]:
    """The webhook's rules of the spec alone (``ValidateWorkload``'s pod sets and their
    ``minCount``), remembered per spec and :data:`POD_SET_GATES` as the schema's are."""
    encoded = _spec_key(spec) if REMEMBER_SPEC_ERRORS else None
    if encoded is None:
        return _webhook_workload_spec_rules(spec, gates)
    key = (encoded, tuple(gates.enabled(name) for name in POD_SET_GATES))
    hit = _spec_webhook_memo.get(key)
    if hit is None:
        errs = _webhook_workload_spec_rules(spec, gates)
        _remember(_spec_webhook_memo, key, errs)
        return errs
    return list(hit)


def _webhook_workload_spec_rules(spec: k.WorkloadSpec, gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, pod_set in enumerate(spec.pod_sets):
        errs += _webhook_pod_set(idx("spec.podSets", i), pod_set, gates)
    variable = sum(1 for ps in spec.pod_sets if ps.min_count is not None)
    if variable > 1:
        errs.append(invalid("spec.podSets", variable, "at most one podSet can use minCount"))
    return errs


def _webhook_pod_set(path: str, pod_set: k.PodSet, gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    if gates.enabled("WorkloadValidationForPodSetMetadata"):
        meta = pod_set.template.metadata
        errs += validate_labels(_str_map(meta.get("labels")), f"{path}.template.metadata.labels")
        errs += validate_annotations(
            _str_map(meta.get("annotations")), f"{path}.template.metadata.annotations"
        )
    for p, resources in _pod_resources(f"{path}.template.spec", pod_set.template.spec):
        for section in ("requests", "limits"):
            values = resources.get(section)
            if isinstance(values, Mapping):
                errs += _webhook_resource_list(f"{p}.{section}", values, gates)
    if gates.enabled("TASValidateWorkloadSliceSize") and pod_set.topology_request is not None:
        errs += _webhook_tas_slice_size(f"{path}.topologyRequest", pod_set.topology_request)
    return errs


def _webhook_tas_slice_size(path: str, request: Mapping[str, Any]) -> list[FieldError]:
    """Upstream ``workload_webhook.go`` ``validateTASSliceSize`` (the request as its JSON map; an
    absent field is a nil pointer)."""
    errs: list[FieldError] = []
    required_topology = request.get("podSetSliceRequiredTopology")
    size = request.get("podSetSliceSize")
    size_path = f"{path}.podSetSliceSize"
    if required_topology is not None:
        if size is None:
            errs.append(required(size_path, "must be set when podSetSliceRequiredTopology is specified"))
        elif isinstance(size, int) and size <= 0:
            errs.append(invalid(size_path, size, "must be greater than 0"))
    if required_topology is None and size is not None:
        errs.append(forbidden(size_path, "may not be set when podSetSliceRequiredTopology is not specified"))
    constraints = request.get("podsetSliceRequiredTopologyConstraints")
    for i, constraint in enumerate(constraints if isinstance(constraints, list) else []):
        value = constraint.get("size", 0) if isinstance(constraint, Mapping) else 0
        if isinstance(value, int) and value <= 0:
            errs.append(
                invalid(
                    f"{idx(f'{path}.podsetSliceRequiredTopologyConstraints', i)}.size",
                    value,
                    "must be greater than 0",
                )
            )
    return errs


def _str_map(value: Any) -> dict[str, str]:
    return {str(name): str(v) for name, v in value.items()} if isinstance(value, Mapping) else {}


def _webhook_resource_list(path: str, values: Mapping[str, Any], gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    check_negative = gates.enabled("WorkloadValidateResourcesAreNonNegative")
    for name, value in values.items():
        if name == "pods":
            errs.append(invalid(key(path, name), "pods", "the key is reserved for internal kueue use"))
        if check_negative:
            remember = type(value) in (int, float) or (type(value) is str and len(value) <= _REMEMBERED_MAX_LEN)
            negative = _negative_quantity(value) if remember else _negative_of(value)
            if negative is not None:
                errs.append(invalid(key(path, name), negative, IS_NEGATIVE_MSG))
    return errs


def _negative_of(value: Any) -> str | None:
    """The canonical form of ``value`` when it is a negative quantity, else None."""
    if is_valid_quantity(value) and Quantity.parse(value).value < 0:
        return str(Quantity.parse(value))
    return None


_negative_quantity = functools.lru_cache(maxsize=4096, typed=True)(_negative_of)
""":func:`_negative_of` remembered per value (and type: ``1``, ``1.0`` and ``True`` are distinct
keys): every Workload write parsed each container's requests into fractions again."""


def _webhook_admission(wl: k.Workload, old: k.Workload | None) -> list[FieldError]:
    admission = wl.status.admission
    if admission is None:
        if old is not None and has_quota_reservation(old) and old.status.admission is None:
            return []
        return [required("status.admission", "must be set while the QuotaReserved condition is true")]
    names = {ps.name for ps in wl.spec.pod_sets}
    errs: list[FieldError] = []
    for i, psa in enumerate(admission.pod_set_assignments):
        p = idx("status.admission.podSetAssignments", i)
        if psa.name not in names:
            errs.append(not_found(f"{p}.name", psa.name))
        count = psa.count or 0
        if count <= 0:
            continue
        for resource, value in psa.resource_usage.items():
            if resource_value(resource, value) % count:
                errs.append(
                    invalid(
                        key(f"{p}.resourceUsage", resource),
                        # upstream's bad value is the resource.Quantity, which field.Error renders
                        # with json.Marshal: a quoted canonical string.
                        str(Quantity.parse(value)),
                        f"is not a multiple of {count}",
                    )
                )
    return errs


ELASTIC_JOB_ANNOTATION: Final = "kueue.x-k8s.io/elastic-job"
WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-replacement-for"


def is_elastic_workload(wl: k.Workload, gates: FeatureGates) -> bool:
    """Upstream ``workloadslicing.Enabled``: gate ``ElasticJobsViaWorkloadSlices`` on and the
    ``kueue.x-k8s.io/elastic-job: "true"`` annotation."""
    return (
        gates.enabled("ElasticJobsViaWorkloadSlices")
        and wl.metadata.annotations.get(ELASTIC_JOB_ANNOTATION) == "true"
    )


def _webhook_reclaimable_pods(
    wl: k.Workload, old: k.Workload | None, gates: FeatureGates
) -> list[FieldError]:
    """Upstream ``workload_webhook.go`` ``validateReclaimablePods``: an elastic workload's count
    left unchanged from ``old`` may exceed its shrunk pod set (``isPreexistingStaleCount``)."""
    if not wl.status.reclaimable_pods:
        return []
    by_name = {ps.name: ps for ps in wl.spec.pod_sets}
    stale = (
        {(rp.name, rp.count) for rp in old.status.reclaimable_pods}
        if old is not None and is_elastic_workload(wl, gates)
        else set()
    )
    errs: list[FieldError] = []
    for rp in wl.status.reclaimable_pods:
        p = key("status.reclaimablePods", rp.name)
        pod_set = by_name.get(rp.name)
        if pod_set is None:
            errs.append(not_supported(f"{p}.name", rp.name, list(by_name)))
        elif rp.count > pod_set.count and (rp.name, rp.count) not in stale:
            errs.append(invalid(f"{p}.count", rp.count, f"should be less or equal to {pod_set.count}"))
    return errs


def _webhook_check_states(wl: k.Workload) -> list[FieldError]:
    names = sorted({ps.name for ps in wl.spec.pod_sets})
    errs: list[FieldError] = []
    for i, state in enumerate(wl.status.admission_checks):
        for j, update in enumerate(state.pod_set_updates):
            p = idx(f"{idx('status.admissionChecks', i)}.podSetUpdates", j)
            if update.name not in names:
                errs.append(not_supported(f"{p}.name", update.name, names))
            errs += _webhook_tolerations(f"{p}.tolerations", update.tolerations)
            errs += validate_annotations(update.annotations, f"{p}.annotations")
            errs += validate_labels(update.node_selector, f"{p}.nodeSelector")
            errs += validate_labels(update.labels, f"{p}.labels")
    return errs


def _webhook_workload_annotations(wl: k.Workload, gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    annotations = wl.metadata.annotations
    if gates.enabled("AdmissionGatedBy"):
        errs += admission_gated_by_format_errors(annotations.get(k.ADMISSION_GATED_BY_ANNOTATION, ""))
    if gates.enabled("PriorityBoost") and k.PRIORITY_BOOST_ANNOTATION in annotations:
        errs += _priority_boost(annotations[k.PRIORITY_BOOST_ANNOTATION])
    return errs


def _split_gates(value: str) -> list[str]:
    return [gate.strip() for gate in value.split(",")]


def admission_gated_by_update_errors(old: str | None, new: str | None) -> list[FieldError]:
    """``webhook.ValidateAdmissionGatedByAnnotationOnUpdate`` (pkg/util/webhook): the annotation may
    not be added after creation, and an update may only remove gates (the format is checked apart)."""
    old_value, new_value = old or "", new or ""
    errs: list[FieldError] = []
    if not old_value and new_value:
        errs.append(forbidden(ADMISSION_GATED_BY_PATH, "cannot add admission gate after creation"))
    if old_value and new_value and not set(_split_gates(new_value)) <= set(_split_gates(old_value)):
        errs.append(forbidden(ADMISSION_GATED_BY_PATH, "can only remove gates, not add new ones"))
    return errs


def admission_gated_by_format_errors(value: str) -> list[FieldError]:
    """``validateAdmissionGatedByAnnotationFormat`` (pkg/util/webhook): comma-separated, distinct,
    domain-prefixed gate names of at most 63 characters."""
    if not value:
        return []
    errs: list[FieldError] = []
    seen: set[str] = set()
    for gate in _split_gates(value):
        if not gate:
            errs.append(invalid(ADMISSION_GATED_BY_PATH, value, "cannot contain empty gate names"))
            continue
        if gate in seen:
            errs.append(invalid(ADMISSION_GATED_BY_PATH, value, f"duplicate gate name: {gate}"))
            continue
        seen.add(gate)
        errs += is_domain_prefixed_path(ADMISSION_GATED_BY_PATH, gate)
        if len(gate) > MAX_GATE_NAME_LENGTH:
            errs.append(too_long(ADMISSION_GATED_BY_PATH, MAX_GATE_NAME_LENGTH))
    return errs


def _priority_boost(value: str) -> list[FieldError]:
    """Upstream ``workload_webhook.go`` ``validateWorkload``: the annotation, when present, must parse
    as ``priority.PriorityBoost`` does (``strconv.ParseInt(v, 10, 32)``)."""
    if value == "":
        return [invalid(PRIORITY_BOOST_PATH, value, 'must be a valid signed integer; use "0" explicitly, empty string is not allowed')]
    if parse_int(value, INT32, "ParseInt")[0] is None:
        return [invalid(PRIORITY_BOOST_PATH, value, "must be a valid signed integer")]
    return []


def _webhook_workload_update(wl: k.Workload, old: k.Workload, gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    if has_quota_reservation(old):
        errs += _immutable_pod_sets(wl.spec.pod_sets, old.spec.pod_sets, gates)
    if has_quota_reservation(wl) and has_quota_reservation(old):
        errs += _reclaimable_update(wl, old, gates)
    errs += _admission_update(wl.status.admission, old.status.admission, gates)
    errs += _ready_pod_set_updates(wl, old)
    replacement = (
        gates.enabled("ElasticJobsViaWorkloadSlices")
        and WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION in wl.metadata.annotations
    )  # upstream ``validateClusterNameUpdate``: a workload slice's replacement may set any clusterName
    if (
        not replacement
        and old.status.cluster_name is None
        and wl.status.cluster_name is not None
        and (wl.status.cluster_name not in old.status.nominated_cluster_names)
    ):
        errs.append(
            invalid(
                "status.clusterName",
                wl.status.cluster_name,
                "when setting clusterName it must be one of the nominatedClusterNames",
            )
        )
    if gates.enabled("AdmissionGatedBy"):
        # Upstream ``ValidateAdmissionGatedByAnnotationOnUpdate``, last in ``ValidateWorkloadUpdate``;
        # it checks the new value's format again (``ValidateWorkload`` did): the aggregated
        # message shows such an error once (:func:`aggregate` drops repeats as ``ToAggregate`` does).
        new_value = wl.metadata.annotations.get(k.ADMISSION_GATED_BY_ANNOTATION)
        errs += admission_gated_by_update_errors(old.metadata.annotations.get(k.ADMISSION_GATED_BY_ANNOTATION), new_value)
        errs += admission_gated_by_format_errors(new_value or "")
    return errs


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def go_value(value: Any, go_type: str) -> Raw:
    """A bad value that upstream's webhook holds as a Go value of ``go_type``: ``field.Error``
    prints it as ``json.Marshal`` writes it (:func:`pykueue.api.gojson.marshal`: struct field
    order, ``"metadata":{}``, zero fields without ``omitempty``, canonical quantities)."""
    return Raw(gojson.marshal(value, go_type))


def _immutable_pod_sets(
    new: Sequence[k.PodSet], old: Sequence[k.PodSet], gates: FeatureGates
) -> list[FieldError]:
    if len(new) != len(old):
        return [invalid("spec.podSets", go_value(list(new), "[]PodSet"), FIELD_IMMUTABLE_MSG)]
    errs: list[FieldError] = []
    elastic = gates.enabled("ElasticJobsViaWorkloadSlices")
    for i, (new_ps, old_ps) in enumerate(zip(new, old, strict=True)):
        compared = (
            msgspec.structs.replace(new_ps, count=old_ps.count)
            if elastic and new_ps.count < old_ps.count
            else new_ps
        )
        # Equal structs encode equally: the encodings are compared only when the structs differ
        # (a status write of an admitted Workload keeps its pod sets; encoding both was most of it).
        if compared != old_ps and _builtins(compared) != _builtins(old_ps):
            # upstream ``validateImmutablePodSets`` names the item ``path.Child(strconv.Itoa(i))``
            errs.append(invalid(f"spec.podSets.{i}", go_value(new_ps, "PodSet"), FIELD_IMMUTABLE_MSG))
    return errs


def _reclaimable_update(wl: k.Workload, old: k.Workload, gates: FeatureGates) -> list[FieldError]:
    """Upstream ``validateReclaimablePodsUpdate`` (called with quota reserved before and after):
    counts may not decrease nor entries go, except for an elastic workload's pod sets scaled
    down below their admitted count (``scaledDownPodSetNames``)."""
    old_counts = {rp.name: rp.count for rp in old.status.reclaimable_pods}
    new_counts = {rp.name: rp.count for rp in wl.status.reclaimable_pods}
    if old_counts == new_counts or not old_counts:
        return []
    scaled_down = _scaled_down_pod_sets(wl, gates)
    errs: list[FieldError] = []
    for name, count in new_counts.items():
        if name in old_counts and count < old_counts[name] and name not in scaled_down:
            errs.append(
                invalid(
                    f"{key('status.reclaimablePods', name)}.count",
                    count,
                    f"cannot be less than {old_counts[name]}",
                )
            )
    errs += [
        required(key("status.reclaimablePods", name), "cannot be removed")
        for name in old_counts
        if name not in new_counts and name not in scaled_down
    ]
    return errs


def _scaled_down_pod_sets(wl: k.Workload, gates: FeatureGates) -> set[str]:
    """Upstream ``scaledDownPodSetNames``: an elastic workload's pod sets whose count is below
    the count their assignment was admitted with."""
    admission = wl.status.admission
    if admission is None or not is_elastic_workload(wl, gates):
        return set()
    counts = {ps.name: ps.count for ps in wl.spec.pod_sets}
    return {
        psa.name
        for psa in admission.pod_set_assignments
        if psa.count is not None and psa.count > counts.get(psa.name, 0)
    }


def _admission_update(
    new: k.Admission | None, old: k.Admission | None, gates: FeatureGates
) -> list[FieldError]:
    if new is None or old is None:
        return []
    comparable_old = old
    if gates.enabled("TopologyAwareScheduling") and len(new.pod_set_assignments) == len(
        old.pod_set_assignments
    ):
        assignments = [
            msgspec.structs.replace(
                o,
                topology_assignment=n.topology_assignment,
                delayed_topology_request=n.delayed_topology_request,
            )
            for n, o in zip(new.pod_set_assignments, old.pod_set_assignments, strict=True)
        ]
        comparable_old = msgspec.structs.replace(old, pod_set_assignments=assignments)
    if _builtins(new) != _builtins(comparable_old):
        return [invalid("status.admission", go_value(new, "Admission"), FIELD_IMMUTABLE_MSG)]
    return []


def _ready_pod_set_updates(wl: k.Workload, old: k.Workload) -> list[FieldError]:
    new_states = {s.name: s for s in wl.status.admission_checks}
    errs: list[FieldError] = []
    for i, old_state in enumerate(old.status.admission_checks):
        new_state = new_states.get(old_state.name)
        if new_state is None or not (old_state.state == new_state.state == k.CHECK_READY):
            continue
        if _builtins(new_state.pod_set_updates) != _builtins(old_state.pod_set_updates):
            errs.append(
                invalid(
                    f"{idx('status.admissionChecks', i)}.podSetUpdates",
                    go_value(new_state.pod_set_updates, "[]PodSetUpdate"),
                    FIELD_IMMUTABLE_MSG,
                )
            )
    return errs


# --- WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig, core kinds --------------------

PRC_MERGE_POLICIES = ("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


def _schema_wpc(
    wpc: k.WorkloadPriorityClass, old: k.WorkloadPriorityClass | None
) -> tuple[list[FieldError], list[FieldError]]:
    return schema_string("description", wpc.description, max_len=2048), []


def _schema_admission_check(
    ac: k.AdmissionCheck, old: k.AdmissionCheck | None
) -> tuple[list[FieldError], list[FieldError]]:
    spec = ac.spec
    errs = schema_string("spec.controllerName", spec.controller_name, max_len=253, min_len=1)
    if spec.parameters is not None:
        params, p = spec.parameters, "spec.parameters"
        errs += schema_string(
            f"{p}.apiGroup", params.api_group, max_len=253, min_len=1, pattern=DNS_SUBDOMAIN_PATTERN
        )
        errs += schema_string(
            f"{p}.kind", params.kind, max_len=63, min_len=1, pattern=AC_PARAMETERS_KIND_PATTERN
        )
        errs += schema_string(f"{p}.name", params.name, max_len=63, min_len=1, pattern=DNS_LABEL_PATTERN)
    if ac.status is not None:
        errs += _schema_conditions(ac.status.conditions, "status.conditions")
    rules = []
    if old is not None and old.spec.controller_name != spec.controller_name:
        rules.append(cel("spec.controllerName", spec.controller_name, FIELD_IMMUTABLE_MSG))
    return errs, rules


def _schema_prc(
    prc: k.ProvisioningRequestConfig, old: k.ProvisioningRequestConfig | None
) -> tuple[list[FieldError], list[FieldError]]:
    spec = prc.spec
    errs = schema_string(
        "spec.provisioningClassName",
        spec.provisioning_class_name,
        max_len=253,
        min_len=1,
        pattern=DNS_SUBDOMAIN_PATTERN,
    )
    errs += schema_properties("spec.parameters", spec.parameters, 100)
    for name, value in spec.parameters.items():
        errs += schema_string(schema_key("spec.parameters", name), value, max_len=255)
    errs += schema_items("spec.managedResources", spec.managed_resources, max_items=100)
    errs += schema_list_set("spec.managedResources", spec.managed_resources)
    if spec.pod_set_updates is not None:
        selectors, path = spec.pod_set_updates.node_selector, "spec.podSetUpdates.nodeSelector"
        errs += schema_items(path, selectors, max_items=8) + schema_list_map(path, selectors, "key")
        for i, selector in enumerate(selectors):
            p = idx(path, i)
            errs += schema_string(
                f"{p}.key", selector.key, max_len=317, min_len=1, pattern=QUALIFIED_KEY_PATTERN
            )
            errs += schema_string(
                f"{p}.valueFromProvisioningClassDetail",
                selector.value_from_provisioning_class_detail,
                max_len=32768,
                min_len=1,
            )
    errs += schema_enum("spec.podSetMergePolicy", spec.pod_set_merge_policy or "", PRC_MERGE_POLICIES)
    return errs, []


def _schema_priority_class(
    pc: k.PriorityClass, old: k.PriorityClass | None
) -> tuple[list[FieldError], list[FieldError]]:
    return schema_enum("preemptionPolicy", pc.preemption_policy, PREEMPTION_POLICIES), []


def _no_schema(obj: Any, old: Any) -> tuple[list[FieldError], list[FieldError]]:
    return [], []


# --- dispatch -------------------------------------------------------------------------------------------

_SchemaFn = Callable[[Any, Any], tuple[list[FieldError], list[FieldError]]]
_SCHEMA: Mapping[type[Any], _SchemaFn] = {
    k.ResourceFlavor: _schema_resource_flavor,
    k.ClusterQueue: _schema_cluster_queue,
    k.Cohort: _schema_cohort,
    k.LocalQueue: _schema_local_queue,
    k.Workload: _schema_workload,
    k.WorkloadPriorityClass: _schema_wpc,
    k.AdmissionCheck: _schema_admission_check,
    k.ProvisioningRequestConfig: _schema_prc,
    k.Namespace: _no_schema,
    k.PriorityClass: _schema_priority_class,
}


def _schema_and_rules(
    obj: k.KueueObject, old: k.KueueObject | None, written: Mapping[str, Any] | None
) -> tuple[list[FieldError], list[FieldError]]:
    """``_SCHEMA[type(obj)](obj, old)``; the kinds whose rules select optional fields without
    ``has()`` also get the object as written (:func:`has_written`)."""
    if isinstance(obj, k.ResourceFlavor):
        return _schema_resource_flavor(obj, old if isinstance(old, k.ResourceFlavor) else None, written)
    if isinstance(obj, k.Workload):
        return _schema_workload(obj, old if isinstance(old, k.Workload) else None, written)
    return _SCHEMA[type(obj)](obj, old)


WEBHOOK_NAMES: Mapping[str, str] = {
    "ResourceFlavor": "vresourceflavor.kb.io",
    "ClusterQueue": "vclusterqueue.kb.io",
    "Cohort": "vcohort.kb.io",
    "Workload": "vworkload.kb.io",
}
"""Kueue's validating webhooks, by kind."""

WEBHOOK_SUBRESOURCES: Mapping[str, frozenset[str]] = {"Workload": frozenset({"status"})}
"""The subresources each validating webhook is registered for besides the main resource.

Upstream's ``config/components/webhook/manifests.yaml`` (generated from the
``+kubebuilder:webhook`` markers in ``pkg/webhooks/*_webhook.go``) lists ``workloads`` and
``workloads/status`` for ``vworkload.kb.io``, but only ``clusterqueues``, ``cohorts`` and
``resourceflavors`` for the others: kube-apiserver calls a webhook only for the resources its
rules name, so a ClusterQueue's or Cohort's status write is checked by the CRD alone."""


def webhook_runs(kind: str, subresource: str | None) -> bool:
    """Whether Kueue's validating webhook of ``kind`` sees a write to ``subresource`` (None: the
    main resource); see :data:`WEBHOOK_SUBRESOURCES`."""
    return subresource is None or subresource in WEBHOOK_SUBRESOURCES.get(kind, frozenset())


def _run_webhook(obj: k.KueueObject, old: Any, gates: FeatureGates) -> list[FieldError]:
    if isinstance(obj, k.ResourceFlavor):
        return _webhook_resource_flavor(obj)
    if isinstance(obj, k.ClusterQueue):
        return _webhook_cluster_queue(obj, old, gates)
    if isinstance(obj, k.Cohort):
        return _webhook_cohort(obj)
    if isinstance(obj, k.Workload):
        return _webhook_workload(obj, old, gates)
    return []


def validate_schema(
    obj: k.KueueObject,
    old: k.KueueObject | None = None,
    *,
    prior: Sequence[FieldError] = (),
    stored: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    written: Mapping[str, Any] | None = None,
    warnings: list[str] | None = None,
) -> list[FieldError]:
    """Stage 1: metadata, OpenAPI and CEL rules of the CRD (CEL skipped after blocking errors).

    ``prior``: OpenAPI errors found before the typed model read the object (a ``required``
    property it defaults), reported first, as blocking as this stage's own. ``stored``: an
    update's new and old object as stored (the storage version), by which the OpenAPI errors on
    values the update leaves as they were are dropped (:func:`_ratcheted`): an object written
    in v1beta1 may hold what only v1beta2's schema refuses, and kube-apiserver's ratcheting lets
    a later v1beta2 write keep it. ``written``: the object as the request wrote it (merged with
    the stored one per subresource), by which the CEL rules tell an absent field from an empty
    one (:func:`has_written`). The CEL errors an update's unchanged values give are ratcheted
    too (:func:`ratchet_rules`), into ``warnings``.
    """
    _check_old(obj, old)
    name_check = is_dns1123_label if isinstance(obj, k.Namespace) else is_dns1123_subdomain
    errs = [*prior, *_schema_metadata(obj, name_check)]
    schema_errs, cel_errs = _schema_and_rules(obj, old, written)
    if (schema_errs or cel_errs) and stored is not None:
        from pykueue.apiserver.crdgen import shared_kueue_schema

        try:
            schema: Mapping[str, Any] | None = shared_kueue_schema(obj.kind, STORAGE_VERSION)
        except KeyError:  # not a Kueue CRD (a Namespace, a PriorityClass): items correlate by index
            schema = None
        schema_errs = ratchet_openapi(schema_errs, *stored, schema)
        cel_errs = ratchet_rules(obj.kind, STORAGE_VERSION, cel_errs, *stored, schema, warnings)
    errs += schema_errs
    if any(e.type in _BLOCKING_TYPES for e in errs):
        return [*errs, cel_skipped()] if cel_errs or _has_cel(obj) else errs
    return errs + cel_errs


STORAGE_VERSION = "v1beta2"


def validate_written_schema(
    obj: k.KueueObject,
    old: k.KueueObject | None,
    written: Mapping[str, Any],
    written_old: Mapping[str, Any] | None,
    version: str,
    warnings: list[str] | None = None,
) -> list[FieldError]:
    """Stage 1 of a write in a served version other than the storage version (``v1beta1``).

    kube-apiserver validates a custom resource in the version it was written in, against that
    version's schema and CEL rules (apiextensions-apiserver's ``customResourceStrategy``: one
    strategy, with its version's validator, per served version), and converts it to the storage
    version only afterwards; the validating webhooks then see it in their version (``v1beta2``,
    ``matchPolicy: Equivalent``). So the v1beta2-only bounds (``status.conditions`` at most 16,
    ``topologyRequest``'s lengths, ``admissionChecksStrategy``'s ``minItems``, an
    ``AdmissionCheck``'s non-empty ``controllerName``, ...) do not apply to a v1beta1 write, and
    v1beta1's own rules (``spec.cohort``'s pattern, ``priorityClassName``'s CEL rules) do, at
    v1beta1's field paths. ``written``/``written_old``: the object as written (merged with the
    stored one per subresource, the version's defaults applied) and the stored object, both in
    ``version``; ``obj``/``old``: the same in the storage version, for the CEL rules both
    versions share. ``required`` properties are :func:`missing_required`'s, checked before.
    """
    from pykueue.apiserver.builtin.schema import validate as validate_openapi
    from pykueue.apiserver.crdgen import shared_kueue_schema

    body = {name: value for name, value in written.items() if name != "metadata"}
    schema = shared_kueue_schema(obj.kind, version)
    errs = _schema_metadata(obj, is_dns1123_subdomain)
    openapi = ratchet_openapi(validate_openapi(body, schema), written, written_old, schema)
    errs += [e for e in openapi if e.type != REQUIRED]
    if any(e.type in _BLOCKING_TYPES for e in errs):
        return [*errs, cel_skipped()] if celrules.RULES.get((obj.kind, version)) else errs
    rule_errs = _version_cel(obj, old, written, written_old, version)
    return errs + ratchet_rules(obj.kind, version, rule_errs, written, written_old, schema, warnings)


_PATH_STEP = re.compile(r"([^.\[]+)|\[([^\]]*)\]")


_UNCORRELATED: Final = object()
"""No old value correlates with a new one (the new node is checked as on a create)."""


def _ratcheted(
    path: str, written: Mapping[str, Any], written_old: Mapping[str, Any] | None, schema: Mapping[str, Any] | None
) -> bool:
    """kube-apiserver's CRD validation ratcheting (``CRDValidationRatcheting``, on by default since
    Kubernetes 1.30; apiextensions-apiserver's ratcheting validators over ``common.CorrelatedObject``):
    an error is dropped (an OpenAPI one) or made a warning (a CEL rule's) when the nearest node on
    its path that correlates with a node of the old object is unchanged. Object members correlate
    by name, the items of a ``listType: map`` list by their map keys, those of a list without a
    list type by index, and those of an ``atomic`` or ``set`` list not at all
    (``correlateOldValueForChildAtNewIndex``): an error inside such an item is the list's, whose
    ``CachedDeepEqual`` compares it whole (``reflect.DeepEqual``). kube-apiserver v1.35 lets an
    update that leaves a ClusterQueue's ``resourceGroups`` (atomic) as they were keep an invalid
    ``nominalQuota`` inside them, and a ResourceFlavor keep nine ``nodeTaints``."""
    if written_old is None:
        return False
    new: Any = written
    old: Any = written_old
    for match in _PATH_STEP.finditer(path):
        name, index = match.group(1), match.group(2)
        key = name if name is not None else index
        if isinstance(new, list) and name is None and index.isdigit() and int(index) < len(new):
            item = new[int(index)]
            old_item = _correlated_item(item, int(index), old, schema)
            if old_item is _UNCORRELATED:
                break
            new, old, schema = item, old_item, _sub_schema(schema, "items")
        elif isinstance(new, Mapping) and isinstance(old, Mapping) and key in new and key in old:
            new, old, schema = new[key], old[key], _member_schema(schema, key)
        else:
            break
    return _unchanged(new, old, schema)


def _sub_schema(schema: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    sub = schema.get(name) if schema is not None else None
    return sub if isinstance(sub, Mapping) else None


def _member_schema(schema: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    props = _sub_schema(schema, "properties")
    if props is not None and isinstance(props.get(name), Mapping):
        member: Mapping[str, Any] = props[name]
        return member
    return _sub_schema(schema, "additionalProperties")


def _correlated_item(item: Any, index: int, old: Any, schema: Mapping[str, Any] | None) -> Any:
    """The old item a new list item is compared with, or :data:`_UNCORRELATED`."""
    if not isinstance(old, list):
        return _UNCORRELATED
    list_type = schema.get("x-kubernetes-list-type") if schema is not None else None
    if list_type in ("atomic", "set"):
        return _UNCORRELATED
    if list_type == "map":
        keys = (schema or {}).get("x-kubernetes-list-map-keys") or ()
        if not isinstance(item, Mapping):
            return _UNCORRELATED
        wanted = [item.get(k) for k in keys]
        return next(
            (o for o in old if isinstance(o, Mapping) and [o.get(k) for k in keys] == wanted), _UNCORRELATED
        )
    return old[index] if index < len(old) else _UNCORRELATED


def _unchanged(new: Any, old: Any, schema: Mapping[str, Any] | None) -> bool:
    """``CorrelatedObject.CachedDeepEqual``: equal, through correlated children; a list whose
    items do not correlate (``atomic``, ``set``) is compared whole."""
    if isinstance(new, list) and isinstance(old, list):
        if len(new) != len(old):
            return False
        if (schema or {}).get("x-kubernetes-list-type") in ("atomic", "set"):
            return bool(new == old)
        items = _sub_schema(schema, "items")
        for i, item in enumerate(new):
            old_item = _correlated_item(item, i, old, schema)
            if old_item is _UNCORRELATED or not _unchanged(item, old_item, items):
                return False
        return True
    if isinstance(new, Mapping) and isinstance(old, Mapping):
        return new.keys() == old.keys() and all(
            _unchanged(value, old[key], _member_schema(schema, key)) for key, value in new.items()
        )
    return bool(new == old)


def ratchet_openapi(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any] | None, schema: Mapping[str, Any] | None
) -> list[FieldError]:
    """The OpenAPI errors an update keeps: those on values it left as they were are dropped
    (:func:`_ratcheted`), but for ``Required`` ones."""
    if old is None:
        return errs
    return [e for e in errs if e.type == REQUIRED or not _ratcheted(e.field, new, old, schema)]


def ratchet_rules(
    kind: str,
    version: str,
    errs: list[FieldError],
    new: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    schema: Mapping[str, Any] | None,
    warnings: list[str] | None = None,
) -> list[FieldError]:
    """kube-apiserver's CEL ratcheting (``CRDValidationRatcheting``, on by default since 1.30;
    apiextensions-apiserver ``cel.Validator.validateExpressions``): on an update, a rule that
    does not read ``oldSelf`` and is false on a node that correlates with an unchanged node of
    the old object (:func:`_ratcheted`) gives a warning (its error's text) instead of its
    error. A rule that failed to evaluate, or a transition rule, is never ratcheted. Returns the
    errors kept; the ratcheted ones go to ``warnings`` (when given)."""
    if old is None or not errs:
        return errs
    transition = _transition_rule_messages(kind, version)
    kept: list[FieldError] = []
    for err in errs:
        if (
            err.detail in transition
            or " evaluating rule: " in err.detail
            or not _ratcheted(err.field, new, old, schema)
        ):
            kept.append(err)
        elif warnings is not None:
            warnings.append(str(err))
    return kept


@functools.cache
def _transition_rule_messages(kind: str, version: str) -> frozenset[str]:
    """The messages of ``kind``'s rules in ``version`` that read ``oldSelf``."""
    table = celrules.RULES.get((kind, version), {})
    return frozenset(rule.message for rules in table.values() for rule in rules if "oldSelf" in rule.rule)


def _version_cel(
    obj: k.KueueObject,
    old: k.KueueObject | None,
    written: Mapping[str, Any],
    written_old: Mapping[str, Any] | None,
    version: str,
) -> list[FieldError]:
    """The CEL rules of ``version``: the storage version's rules that ``version`` shares (same
    message), then, for a Workload, v1beta1's own ``priorityClassName`` rules."""
    shared = _rule_messages(obj.kind, version)
    only_storage = _rule_messages(obj.kind, STORAGE_VERSION) - shared
    errs = [e for e in _schema_and_rules(obj, old, written)[1] if e.detail not in only_storage]
    if isinstance(obj, k.Workload) and version == "v1beta1":
        # in the CRD's order: podSetAssignments, v1beta1's two priority rules, the other root
        # rules, then the spec rule before those below spec
        first = _wl_rule("", "podSetAssignments must have")
        head = [e for e in errs if e.field == ROOT_PATH and e.detail == first]
        root = [e for e in errs if e.field == ROOT_PATH and e.detail != first]
        rest = [e for e in errs if e.field != ROOT_PATH]
        own_root, own_spec = _cel_workload_v1beta1(written, written_old)
        errs = head + own_root + root + own_spec + rest
    return errs


@functools.cache
def _rule_messages(kind: str, version: str) -> frozenset[str]:
    table = celrules.RULES.get((kind, version), {})
    return frozenset(rule.message for rules in table.values() for rule in rules)


def _cel_workload_v1beta1(
    written: Mapping[str, Any], written_old: Mapping[str, Any] | None
) -> tuple[list[FieldError], list[FieldError]]:
    """The v1beta1 Workload CRD's ``priorityClassSource``/``priorityClassName`` rules (upstream's
    ``apis/kueue/v1beta1/workload_types.go`` ``+kubebuilder:validation:XValidation`` markers),
    evaluated on the v1beta1 objects: v1beta2 states them on ``priorityClassRef`` instead."""
    spec = written.get("spec") or {}
    root: list[FieldError] = []
    old_spec = (written_old or {}).get("spec") or {}
    old_status = (written_old or {}).get("status") or {}
    old_reserved = any(
        c.get("type") == QUOTA_RESERVED and c.get("status") == "True" for c in old_status.get("conditions") or []
    )
    source = "priorityClassSource"
    if written_old is not None and old_reserved and source in old_spec and source in spec:
        if old_spec[source] != spec[source]:
            root.append(cel(ROOT_PATH, OMIT, _wl_rule_v1beta1("", "priorityClassSource is immutable")))
        name = "priorityClassName"
        if (
            spec[source] != "kueue.x-k8s.io/workloadpriorityclass"
            and name in old_spec
            and name in spec
            and old_spec[name] != spec[name]
        ):
            root.append(cel(ROOT_PATH, OMIT, _wl_rule_v1beta1("", "priorityClassName is immutable")))
    own_spec: list[FieldError] = []
    if "priorityClassName" in spec and "priority" not in spec:
        own_spec.append(cel("spec", OMIT, _wl_rule_v1beta1("spec", "priority should not be nil")))
    return root, own_spec


def _wl_rule_v1beta1(path: str, starts: str) -> str:
    return celrules.message("Workload", path, starts, "v1beta1")


def has_blocking_error(errs: Iterable[FieldError]) -> bool:
    """apiextensions-apiserver's ``hasBlockingErr``: an error of a type that keeps the CEL rules
    from running (unsupported value, required, too long, too many, wrong type)."""
    return any(e.type in _BLOCKING_TYPES for e in errs)


def cel_skipped() -> FieldError:
    """The error kube-apiserver adds when blocking OpenAPI errors kept the CEL rules from running
    (``field.Invalid(nil, nil, ...)``: a v1.35 kube-apiserver renders the nil value as a bare ``null``)."""
    return invalid(ROOT_PATH, Raw("null"), CEL_SKIPPED_MSG)


def _has_cel(obj: k.KueueObject) -> bool:
    return not isinstance(
        obj, k.Namespace | k.PriorityClass | k.WorkloadPriorityClass | k.ProvisioningRequestConfig
    )


def validate_webhook(
    obj: k.KueueObject, old: k.KueueObject | None = None, *, gates: FeatureGates = DEFAULT_GATES
) -> list[FieldError]:
    """Stage 2: Kueue's validating webhook for ``obj``'s kind (empty for kinds without one)."""
    _check_old(obj, old)
    return _run_webhook(obj, old, gates)


def _check_old(obj: k.KueueObject, old: k.KueueObject | None) -> None:
    if old is not None and type(old) is not type(obj):
        raise TypeError(f"old object is a {type(old).__name__}, expected {type(obj).__name__}")


def validate(
    obj: k.KueueObject,
    old: k.KueueObject | None = None,
    *,
    gates: FeatureGates = DEFAULT_GATES,
    written: Mapping[str, Any] | None = None,
) -> list[FieldError]:
    """All errors the API server would report for creating ``obj`` (or updating ``old`` to it);
    ``written``: the object as written, if known (see :func:`validate_schema`)."""
    return _staged(obj, old, gates, written)[1]


def _staged(
    obj: k.KueueObject,
    old: k.KueueObject | None,
    gates: FeatureGates,
    written: Mapping[str, Any] | None = None,
) -> tuple[str | None, list[FieldError]]:
    errs = validate_schema(obj, old, written=written)
    if errs:
        return None, errs
    return WEBHOOK_NAMES.get(obj.kind), validate_webhook(obj, old, gates=gates)


def validate_or_raise(
    obj: k.KueueObject, old: k.KueueObject | None = None, *, gates: FeatureGates = DEFAULT_GATES
) -> None:
    """Raise :class:`ValidationFailed` if :func:`validate` reports any error."""
    webhook, errs = _staged(obj, old, gates)
    if errs:
        raise ValidationFailed(obj.kind, obj.metadata.name, errs, webhook=webhook)


# --- the apiserver-style exception --------------------------------------------------------------------

KIND_GROUPS: Mapping[str, str] = {"Namespace": "", "PriorityClass": "scheduling.k8s.io"}


def aggregate(errors: Sequence[FieldError]) -> str:
    """``ErrorList.ToAggregate().Error()``: de-duplicated, bracketed when more than one."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


class ValidationFailed(Exception):
    """The API server refused an object.

    Schema (CRD) failures read ``ClusterQueue.kueue.x-k8s.io "name" is invalid: <errors>``; a
    denial by one of Kueue's webhooks reads ``admission webhook "vclusterqueue.kb.io" denied the
    request: <errors>`` (``webhook`` names it).
    """

    def __init__(
        self, kind: str, name: str, errors: Sequence[FieldError], *, webhook: str | None = None
    ) -> None:
        self.kind = kind
        self.name = name
        self.errors = list(errors)
        self.webhook = webhook
        super().__init__(self.message)

    @property
    def qualified_kind(self) -> str:
        """``Kind.group`` (just ``Kind`` for the core group)."""
        group = KIND_GROUPS.get(self.kind, k.GROUP)
        return f"{self.kind}.{group}" if group else self.kind

    @property
    def message(self) -> str:
        """The apiserver's error message."""
        if self.webhook:
            return f'admission webhook "{self.webhook}" denied the request: {aggregate(self.errors)}'
        return f'{self.qualified_kind} "{self.name}" is invalid: {aggregate(self.errors)}'

    def __str__(self) -> str:
        return self.message
