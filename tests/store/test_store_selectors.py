"""Label selector parsing and matching (``labels.Parse`` semantics and messages)."""

from __future__ import annotations

import pytest
from storetesting import WL, names, open_store, wl

from pykueue.kube.selectors import SelectorError, parse_label_selector
from pykueue.kube.status import StatusError

LABELS = {"app": "web", "tier": "frontend", "env": "prod", "n": "5", "empty": "", "example.com/team": "a"}

MATCHES = [
    # (selector, matches LABELS)
    ("", True),
    ("   ", True),
    ("app", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),
    ("app in (web,db)", True),
    ("app in (db)", False),
    ("app notin (db,cache)", True),
    ("app notin (web)", False),
    ("missing notin (a)", True),
    ("missing in (a)", False),
    ("app=web,tier=frontend", True),
    ("app=web,tier=backend", False),
    ("app = web , tier in ( frontend , x )", True),
    ("n>4", True),
    ("n>5", False),
    ("n<6", True),
    ("n<5", False),
    ("app>1", False),  # not an integer label value
    ("missing>1", False),
    ("empty=", True),
    ("empty", True),
    ("app=", False),
    ("empty in ()", True),
    ("empty in (,x)", True),
    ("example.com/team=a", True),
    ("example.com/team in (b)", False),
    ("in in (in)", False),  # keywords are values where values are expected
    ("env in (prod),!legacy,app", True),
]


@pytest.mark.parametrize(("selector", "expected"), MATCHES)
def test_selector_matches(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_keyword_value_parses() -> None:
    assert parse_label_selector("in in (in)").matches({"in": "in"})


INVALID = [
    ("app=web,", "found '', expected: identifier after ','"),
    (",app", "found ',', expected: !, identifier, or 'end of string'"),
    ("app in web", "unable to parse requirement: found 'web' expected: '('"),
    ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("app web", "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, >, <"),
    ("app=web=db", "found '=', expected: ',' or 'end of string'"),
    ("!app=web", "found '=', expected: ',' or 'end of string'"),
    ("=web", "found '=', expected: !, identifier, or 'end of string'"),
    ("app=(x)", "unable to parse requirement: found '(', expected: identifier"),
    ("app in (a) x", "found 'x', expected: ',' or 'end of string'"),
    ("app >< 1", "unable to parse requirement: found '<', expected: identifier"),
    (
        "n>x",
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    (
        "-app=x",
        'unable to parse requirement: <nil>: Invalid value: "-app": name part must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    (
        "app=-x",
        'unable to parse requirement: values[0][app]: Invalid value: "-x": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    (
        "Example.com/x=y",
        'unable to parse requirement: <nil>: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    (
        "a" * 64,
        f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": name part must be no more than 63 characters',
    ),
]


@pytest.mark.parametrize(("selector", "message"), INVALID)
def test_invalid_selectors(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(selector)
    assert err.value.message == message
    assert isinstance(err.value, StatusError) and (err.value.code, err.value.reason) == (400, "BadRequest")


@pytest.mark.parametrize(
    ("selector", "text"),
    [("b=1,a in (y,x),!c,d", "a in (x,y),b=1,!c,d"), ("x>3,y<2", "x>3,y<2"), ("", "")],
)
def test_selector_string_is_normalised(selector: str, text: str) -> None:
    assert str(parse_label_selector(selector)) == text


def test_list_and_watch_use_selectors() -> None:
    store = open_store()
    store.create(WL, wl("a", labels={"team": "x"}))
    store.create(WL, wl("b", labels={"team": "y"}))
    store.create(WL, wl("c"))
    assert names(store.list(WL, label_selector="team")[0]) == ["a", "b"]
    assert names(store.list(WL, label_selector="team notin (x)")[0]) == ["b", "c"]
    with pytest.raises(SelectorError):
        store.list(WL, label_selector="team in")
    with pytest.raises(SelectorError):
        store.watch(WL, label_selector="(")
