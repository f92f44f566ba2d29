"""Label and field selectors (``k8s.io/apimachinery/pkg/labels`` and ``.../fields``).

Both parse the Kubernetes string syntax into a predicate over plain object dicts. The store
evaluates label selectors for lists itself; the HTTP layer parses them here first (a malformed
selector is a 400 before anything is read) and uses the same predicates to filter watch events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api.validation import is_qualified_name, is_valid_label_value

ObjectPredicate = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """A selector that does not parse or names an unsupported field (HTTP 400)."""


# --- label selectors ---------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|\(|\)|,|<|>|[^\s=!(),<>]+)")
_SET_OPS = {"in": "in", "notin": "notin"}


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``key op values``."""

    key: str
    op: str  # exists | !exists | = | != | in | notin | gt | lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label map satisfies the requirement (``labels.Requirement.Matches``)."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            actual = int(labels[self.key])
        except ValueError:
            return False
        bound = int(self.values[0])
        return actual > bound if self.op == "gt" else actual < bound


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector (all requirements must hold)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label map satisfies every requirement."""
        lbls = labels or {}
        return all(r.matches(lbls) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object's ``metadata.labels`` satisfy the selector."""
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        return self.matches(labels if isinstance(labels, Mapping) else None)

    @property
    def empty(self) -> bool:
        """An empty selector matches everything."""
        return not self.requirements


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN_RE.match(stripped, pos)
        if not m:  # pragma: no cover - the pattern matches every non-space character
            raise SelectorError(f"unable to parse requirement: unexpected character at {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _LabelParser:
    """Recursive-descent parser over the token list."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    def parse(self) -> LabelSelector:
        reqs: list[Requirement] = []
        if not self.tokens:
            return LabelSelector(())
        while True:
            reqs.append(self.requirement())
            tok = self.take()
            if tok is None:
                break
            if tok != ",":
                raise SelectorError(f"found '{tok}', expected: ',' or 'end of string'")
        return LabelSelector(tuple(reqs))

    def requirement(self) -> Requirement:
        tok = self.take()
        if tok == "!":
            return Requirement(self.key(self.take()), "!exists")
        key = self.key(tok)
        op = self.peek()
        if op is None or op == ",":
            return Requirement(key, "exists")
        self.pos += 1
        if op in ("=", "==", "!="):
            return Requirement(key, "!=" if op == "!=" else "=", (self.single_value(),))
        if op in _SET_OPS:
            return Requirement(key, _SET_OPS[op], self.value_set())
        if op in ("<", ">"):
            return Requirement(key, "lt" if op == "<" else "gt", (self.int_value(),))
        raise SelectorError(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")

    def key(self, tok: str | None) -> str:
        if tok is None or tok in ("=", "==", "!=", "!", "(", ")", ",", "<", ">"):
            raise SelectorError(f"found '{tok or ''}', expected: identifier")
        problems = is_qualified_name(tok)
        if problems:
            raise SelectorError(
                f"unable to parse requirement: key: Invalid value: {tok!r}: {'; '.join(problems)}"
            )
        return tok

    def single_value(self) -> str:
        tok = self.peek()
        if tok is None or tok == ",":
            return ""
        self.pos += 1
        return self.check_value(tok)

    def int_value(self) -> str:
        tok = self.take()
        if tok is None or not re.fullmatch(r"-?\d+", tok):
            raise SelectorError(
                f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {tok}"
            )
        return tok

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise SelectorError("found end of string, expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            tok = self.take()
            if tok is None:
                raise SelectorError("found end of string, expected: ')'")
            if tok == ")":
                if expect_value:
                    values.append("")
                break
            if tok == ",":
                if expect_value:
                    values.append("")
                expect_value = True
                continue
            if not expect_value:
                raise SelectorError(f"found '{tok}', expected: ',' or ')'")
            values.append(self.check_value(tok))
            expect_value = False
        return tuple(values)

    @staticmethod
    def check_value(value: str) -> str:
        if value in ("=", "==", "!=", "!", "(", ")", "<", ">"):
            raise SelectorError(f"found '{value}', expected: identifier")
        problems = is_valid_label_value(value)
        if problems:
            raise SelectorError(
                f"unable to parse requirement: values[0]: Invalid value: {value!r}: {'; '.join(problems)}"
            )
        return value


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a label selector string (``a=b,c!=d,e in (x,y),!f,g``); raises :class:`SelectorError`."""
    if not text or not text.strip():
        return LabelSelector(())
    return _LabelParser(text).parse()


# --- field selectors ---------------------------------------------------------------------------------

BASE_FIELDS = ("metadata.name", "metadata.namespace")

FIELD_ALIASES: Mapping[tuple[str, str], Mapping[str, str]] = {
    ("", "events"): {"source": "source.component"},
}
"""Field labels that are not a path in the object (by group and resource)."""


FieldGetter = Callable[[Mapping[str, Any], str], "str | None"]
"""The string a field selector compares for a field label (None: not selectable)."""


@dataclass(frozen=True)
class FieldRequirement:
    """``field op value`` with op ``=`` or ``!=``."""

    field: str
    path: tuple[str, ...]
    negate: bool
    value: str
    getter: FieldGetter | None = None

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object's field value satisfies the requirement."""
        actual = self.getter(obj, self.field) if self.getter is not None else None
        if actual is None:
            actual = field_value(obj, self.path)
        return (actual == self.value) != self.negate


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector (all requirements must hold)."""

    requirements: tuple[FieldRequirement, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object satisfies every requirement."""
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """An empty selector matches everything."""
        return not self.requirements


def field_value(obj: Mapping[str, Any], path: Iterable[str]) -> str:
    """The string form of the value at ``path`` ("" when absent), as field selectors compare it."""
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (str, int, float)):
        return str(cur)
    return ""


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if escaped:
        cur.append("\\")
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=!":
                raise SelectorError(
                    f"invalid field selector: unescaped or invalid escape sequence in {value!r}"
                )
            out.append(value[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: {value!r}: unescaped {ch!r}")
        out.append(ch)
        i += 1
    return "".join(out)


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        idx = _find_unescaped(term, op)
        if idx >= 0:
            return term[:idx], op, term[idx + len(op) :]
    raise SelectorError(f"invalid selector: '{term}'; can't understand '{term}'")


def _find_unescaped(term: str, op: str) -> int:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        if term.startswith(op, i):
            return i
        i += 1
    return -1


def parse_field_selector(
    text: str | None,
    supported: Iterable[str] = (),
    *,
    group: str = "",
    resource: str = "",
    builtin: bool = True,
    getter: FieldGetter | None = None,
) -> FieldSelector:
    """Parse a field selector, accepting only ``metadata.name``, ``metadata.namespace`` and ``supported``.

    An unknown field is a :class:`SelectorError` worded like the real server: ``field label not
    supported: X`` for built-in kinds, ``"X" is not a known field selector: only ...`` for
    custom resources. ``getter`` evaluates a field label (e.g. the registry's ``field_value``);
    when it returns None the label is read as a dotted path.
    """
    if not text or not text.strip():
        return FieldSelector(())
    allowed = list(dict.fromkeys([*BASE_FIELDS, *supported]))
    aliases = FIELD_ALIASES.get((group, resource), {})
    reqs: list[FieldRequirement] = []
    for term in _split_unescaped(text, ","):
        if not term:
            continue
        field, op, raw_value = _split_term(term)
        field = field.strip()
        if field not in allowed and field not in aliases:
            raise SelectorError(_unsupported_field(field, allowed, builtin))
        path = tuple(aliases.get(field, field).split("."))
        reqs.append(FieldRequirement(field, path, op == "!=", _unescape(raw_value), getter))
    return FieldSelector(tuple(reqs))


def _unsupported_field(field: str, allowed: list[str], builtin: bool) -> str:
    if builtin:
        return f"field label not supported: {field}"
    return f'"{field}" is not a known field selector: only ' + ", ".join(f'"{f}"' for f in allowed)
