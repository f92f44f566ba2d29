"""Output as kubectl (cli-runtime) prints it: tables, ``-o name``, ``-o json`` and ``-o yaml``.

* Tables: ``printers.NewTablePrinter`` over a ``metav1.Table`` — upper-cased headers, an optional
  leading ``NAMESPACE`` column, cells joined by tabs into ``printers.GetNewTabWriter`` (Go's
  ``text/tabwriter`` with minwidth 6, tabwidth 4, padding 3, pad char ' ', no flags).
* ``-o name`` / the default of mutating verbs: ``NamePrinter`` (``kind.group/name[ operation]``).
* ``-o json``: ``json.MarshalIndent`` with four spaces; ``-o yaml``: ``sigs.k8s.io/yaml`` (keys
  sorted, lists not indented under their key).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import yaml

TAB_MIN_WIDTH = 6
TAB_PADDING = 3
OUTPUT_FORMATS = ("json", "yaml", "name")


def tabwrite(lines: Sequence[Sequence[str]]) -> str:
    """Go ``tabwriter`` output of tab-separated cells, each line ending in ``\\n``.

    Every cell but a line's last is tab-terminated and belongs to a column; a column is as wide as
    its widest cell plus the padding, at least the minimum width. The last cell is not padded."""
    widths: list[int] = []
    for cells in lines:
        for i, cell in enumerate(cells[:-1]):
            width = max(TAB_MIN_WIDTH, len(cell) + TAB_PADDING)
            if i == len(widths):
                widths.append(width)
            elif width > widths[i]:
                widths[i] = width
    out: list[str] = []
    for cells in lines:
        text = "".join(cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1]))
        out.append(text + (cells[-1] if cells else "") + "\n")
    return "".join(out)


def cell_text(value: Any) -> str:
    """``fmt.Sprintf("%v")`` of a table cell (booleans lower case, None empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, namespaces: Sequence[str] | None = None, headers: bool = True
) -> str:
    """A kubectl table: ``columns`` as in the ``metav1.Table`` column definitions."""
    lines: list[list[str]] = []
    if headers:
        head = [c.upper() for c in columns]
        lines.append(["NAMESPACE", *head] if namespaces is not None else head)
    for i, row in enumerate(rows):
        cells = [cell_text(c) for c in row]
        lines.append([namespaces[i], *cells] if namespaces is not None else cells)
    return tabwrite(lines)


def name_line(obj: Mapping[str, Any], operation: str = "") -> str:
    """``NamePrinter``: ``clusterqueue.kueue.x-k8s.io/name created``."""
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    kind = str(obj.get("kind") or "").lower()
    name = str((obj.get("metadata") or {}).get("name") or "")
    qualified = f"{kind}.{group}" if group else kind
    return f"{qualified}/{name}" + (f" {operation}" if operation else "") + "\n"


class _GoYAMLDumper(yaml.SafeDumper):
    """go-yaml (behind ``sigs.k8s.io/yaml``) quotes with double quotes (``nominalQuota: "9"``)."""

    def choose_scalar_style(self) -> str:
        style: str = super().choose_scalar_style()
        return '"' if style == "'" else style


def render(obj: Mapping[str, Any], fmt: str, operation: str = "") -> str:
    """``obj`` in output format ``fmt`` (json, yaml, name)."""
    if fmt == "json":
        return json.dumps(obj, indent=4, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.dump(dict(obj), Dumper=_GoYAMLDumper, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return name_line(obj, operation)


@contextmanager
def progress(message: str, stream: TextIO | None = None, delay: float = 1.0) -> Iterator[None]:
    """Show ``message`` with a spinner on a terminal when the block takes longer than ``delay``.

    Nothing is written when the stream is not a terminal (pipes, files, tests) or the block is
    quick, so output stays byte-for-byte kubectl's."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
        yield
        return
    done = threading.Event()
    shown = threading.Event()

    def spin() -> None:
        if done.wait(delay):
            return
        frames = "|/-\\"
        i = 0
        start = time.monotonic() - delay
        while not done.is_set():
            out.write(f"\r{frames[i % 4]} {message} ({time.monotonic() - start:.0f}s)")
            out.flush()
            shown.set()
            i += 1
            done.wait(0.1)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown.is_set():
            out.write("\r\033[K")
            out.flush()
