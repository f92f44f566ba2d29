"""Go's ``strconv`` parsing of label and annotation values, with Go's error texts.

Kueue reads integers and booleans from labels and annotations with ``strconv.Atoi``,
``strconv.ParseInt`` and ``strconv.ParseBool``; the Job webhook reports their errors verbatim and
the Job integration ignores values they reject. Both use these functions.
"""

from __future__ import annotations

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def quote(text: str) -> str:
    """``strconv.Quote`` for the texts quoted in error messages (printable ASCII in practice)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_int(text: str, bounds: tuple[int, int] = INT64, func: str = "Atoi") -> tuple[int | None, str]:
    """``strconv.Atoi`` / ``ParseInt(text, 10, bits)``: (value, "") or (None, Go's error text).

    An optional sign and ASCII decimal digits, nothing else (no spaces, underscores or newline);
    ``bounds`` is the range of the bit size; ``func`` names the Go function in the error.
    """
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None, f"strconv.{func}: parsing {quote(text)}: invalid syntax"
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        return None, f"strconv.{func}: parsing {quote(text)}: value out of range"
    return value, ""


def parse_bool(text: str) -> tuple[bool | None, str]:
    """``strconv.ParseBool``: (value, "") or (None, Go's error text)."""
    if text in _TRUE:
        return True, ""
    if text in _FALSE:
        return False, ""
    return None, f"strconv.ParseBool: parsing {quote(text)}: invalid syntax"
