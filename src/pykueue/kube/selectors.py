"""Label and field selectors: the one parser (``k8s.io/apimachinery/pkg/labels`` and ``.../fields``).

Label selectors are a faithful port of ``labels/selector.go``: the same lexer (special symbols
``= ! ( ) , > <``, keywords ``in``/``notin``), the same grammar, the same validation of keys
(qualified names) and values (label values), and the same error messages, e.g.
``unable to parse requirement: found '(', expected: identifier``. Field selectors follow
``fields.ParseSelector`` with the server's per-resource field labels. The store evaluates label
selectors for lists and watches; the HTTP layer parses both here first (a malformed selector is a
400 before anything is read) and uses the same predicates to filter watch events.

>>> sel = parse_label_selector("app=web,tier in (fe,be),!legacy")
>>> sel.matches({"app": "web", "tier": "fe"})
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from .status import StatusError
from .validation import is_qualified_name, is_valid_label_value

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(StatusError):
    """An unparsable or invalid selector, or an unsupported field label: 400 ``BadRequest``."""

    def __init__(self, message: str) -> None:
        super().__init__(400, "BadRequest", message)


class _Tok(IntEnum):
    ERROR = 0
    END = 1
    CLOSED_PAR = 2
    COMMA = 3
    NOT = 4
    DOUBLE_EQUALS = 5
    EQUALS = 6
    GT = 7
    IDENT = 8
    IN = 9
    LT = 10
    NOT_EQUALS = 11
    NOT_IN = 12
    OPEN_PAR = 13


_STRING_TO_TOKEN = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.NOT,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GT,
    "in": _Tok.IN,
    "<": _Tok.LT,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_BINARY_OPERATORS = ["in", "notin", "=", "==", "!=", ">", "<"]

def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- requirements ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One ``key op values`` term; ``op`` is one of ``in notin = == != exists !  > <``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``."""
        op = self.op
        if op in ("in", "=", "=="):
            return self.key in labels and labels[self.key] in self.values
        if op in ("notin", "!="):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in (">", "<"):
            return self._compare(labels)
        return False

    def _compare(self, labels: Mapping[str, str]) -> bool:
        if self.key not in labels or len(self.values) != 1:
            return False
        try:
            have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == ">" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        values = ",".join(sorted(self.values)) if len(self.values) > 1 else self.values[0]
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({values})"
        return f"{self.key}{self.op}{values}"


def _parse_int64(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(text)
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(text)
    return value


def _new_requirement(key: str, op: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement`` with its validation and aggregated error text."""
    errs: list[str] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(key_errs)}")
    if op in (">", "<"):
        for i, value in enumerate(values):
            try:
                _parse_int64(value)
            except ValueError:
                errs.append(
                    f"values[{i}]: Invalid value: {_go_quote(value)}: for 'Gt', 'Lt' operators, "
                    "the value must be an integer"
                )
    for i, value in enumerate(values):
        value_errs = is_valid_label_value(value)
        if value_errs:
            errs.append(f"values[{i}][{key}]: Invalid value: {_go_quote(value)}: {'; '.join(value_errs)}")
    if errs:
        unique = list(dict.fromkeys(errs))
        raise _ParseError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    return Requirement(key, op, tuple(values))


class _ParseError(Exception):
    pass


# --- lexer and parser --------------------------------------------------------------------------


def _lex(text: str) -> list[tuple[_Tok, str]]:
    items: list[tuple[_Tok, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_Tok.END, ""))
            return items
        if text[pos] in _SPECIAL:
            tok, lit, pos = _scan_special(text, pos)
        else:
            start = pos
            while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            lit = text[start:pos]
            tok = _STRING_TO_TOKEN.get(lit, _Tok.IDENT)
        items.append((tok, lit))


def _scan_special(text: str, pos: int) -> tuple[_Tok, str, int]:
    buffer = ""
    last: tuple[_Tok, str] | None = None
    while pos < len(text) and text[pos] in _SPECIAL:
        buffer += text[pos]
        pos += 1
        tok = _STRING_TO_TOKEN.get(buffer)
        if tok is not None:
            last = (tok, buffer)
        elif last is not None:
            pos -= 1
            break
    if last is None:
        return _Tok.ERROR, f"error expected: keyword found '{buffer}'", pos
    return last[0], last[1], pos


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def lookahead(self, values: bool = True) -> tuple[_Tok, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENT
        return tok, lit

    def consume(self, values: bool = True) -> tuple[_Tok, str]:
        result = self.lookahead(values)
        self.pos += 1
        return result

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok == _Tok.END:
                return requirements
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.parse_requirement())
            except _ParseError as err:
                raise _ParseError(f"unable to parse requirement: {err}") from None
            tok, lit = self.consume()
            if tok == _Tok.END:
                return requirements
            if tok != _Tok.COMMA:
                raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            tok2, lit2 = self.lookahead()
            if tok2 not in (_Tok.IDENT, _Tok.NOT):
                raise _ParseError(f"found '{lit2}', expected: identifier after ','")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in ("exists", "!"):
            return _new_requirement(key, op, [])
        op = self.parse_operator()
        values = self.parse_values() if op in ("in", "notin") else self.parse_exact_value()
        return _new_requirement(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume()
        if tok == _Tok.NOT:
            op = "!"
            tok, lit = self.consume()
        if tok != _Tok.IDENT:
            raise _ParseError(f"found '{lit}', expected: identifier")
        errs = is_qualified_name(lit)
        if errs:
            raise _ParseError(f"<nil>: Invalid value: {_go_quote(lit)}: {'; '.join(errs)}")
        if self.lookahead()[0] in (_Tok.END, _Tok.COMMA) and op != "!":
            op = "exists"
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(values=False)
        ops = {
            _Tok.IN: "in",
            _Tok.EQUALS: "=",
            _Tok.DOUBLE_EQUALS: "==",
            _Tok.GT: ">",
            _Tok.LT: "<",
            _Tok.NOT_IN: "notin",
            _Tok.NOT_EQUALS: "!=",
        }
        if tok not in ops:
            raise _ParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return ops[tok]

    def parse_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _Tok.OPEN_PAR:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_Tok.IDENT, _Tok.COMMA):
            values = self.parse_identifiers_list()
            if self.consume()[0] != _Tok.CLOSED_PAR:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return values
        if tok == _Tok.CLOSED_PAR:
            self.consume()
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _Tok.IDENT:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _Tok.COMMA:
                    continue
                if tok2 == _Tok.CLOSED_PAR:
                    return values
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _Tok.COMMA:
                if not values:
                    values.add("")
                tok2, _ = self.lookahead()
                if tok2 == _Tok.CLOSED_PAR:
                    values.add("")
                    return values
                if tok2 == _Tok.COMMA:
                    values.add("")
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok, _ = self.lookahead()
        if tok in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self.consume()
        if tok == _Tok.IDENT:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


@dataclass(frozen=True)
class LabelSelector:
    """A parsed selector: the AND of its requirements (sorted by key, as ``labels.Parse`` does)."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector selects everything."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label set satisfies every requirement."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, object]) -> bool:
        """Whether an object's ``metadata.labels`` satisfy the selector."""
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        return self.matches(labels if isinstance(labels, Mapping) else None)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the Kubernetes label selector syntax; raises :class:`SelectorError` (400) when invalid."""
    if text is None:
        return LabelSelector()
    try:
        requirements = _Parser(text).parse()
    except _ParseError as err:
        raise SelectorError(str(err)) from None
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


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
