"""apimachinery's string validators (``k8s.io/apimachinery/pkg/util/validation``): the one port.

Label keys and values are checked by the selector parser (``kube/selectors.py``), by the store's
callers and by ``api`` validation alike, so the functions live at the bottom, worded as Go words them.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"

_LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"

_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME_RE = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery ``RegexError`` (keeps Go's double space before ``or``)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """apimachinery ``MaxLenError``."""
    return f"must be no more than {length} characters"


def is_dns1123_subdomain(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Subdomain``."""
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label``."""
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL_RE.match(value):
        if _DNS1123_SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """apimachinery ``IsQualifiedName`` (label keys, resource names, condition types)."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {msg}" for msg in is_dns1123_subdomain(prefix))
    else:
        qualified = regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a qualified name {qualified} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append(f"name part {max_len_error(63)}")
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append(
            "name part "
            + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """apimachinery ``IsValidLabelValue``."""
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _LABEL_VALUE_RE.match(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
