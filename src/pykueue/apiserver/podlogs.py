"""The ``pods/log`` subresource: ``GET /api/v1/namespaces/{ns}/pods/{name}/log``.

On a cluster kube-apiserver proxies this to the pod's kubelet; in ``pykueue serve`` the local job
runner is the kubelet, and its pod shim keeps each pod's log in the pod's record directory. The
runner registers a :data:`LogLocator` on the application (``APIServerApp.pod_logs``): given the
stored Pod object it answers that pod's record directory, or None. Nothing in the Pod object names
a path; the runner checks that the record belongs to the pod (its uid).

The log is ``container.log`` in the kubelet's CRI log format (``<RFC3339Nano time> <stdout|stderr>
<P|F> <line>``, written by ``podshim.py``), read as the kubelet reads it
(``pkg/kubelet/kuberuntime/logs/logs.go``, ``ReadLogs``): stdout and stderr interleaved in the
order they were written, ``F`` records end a line and ``P`` records continue one, a line older
than ``since`` is skipped, ``timestamps`` prefixes each line (not each continuation) with its time
as ``2006-01-02T15:04:05.000000000Z07:00``, ``tailLines`` counts records from the end and
``limitBytes`` cuts the output (timestamps included). Records of older versions
(``stdout.log`` / ``stderr.log``, no time per line) are still read: stdout then stderr, each line
stamped with its file's modification time (when its last line was written, so ``since`` never
drops a line written after it).

Options as ``PodLogOptions``, decoded then validated as kube-apiserver does
(``ValidatePodLogOptions``: 422 Invalid naming the field): ``container`` (required when the pod
has several containers), ``follow`` (stream as the process writes, until the pod has ended),
``tailLines``, ``limitBytes``, ``sinceSeconds`` / ``sinceTime`` (at most one), ``timestamps``,
``previous`` (a pod of the runner never restarts a container, so there is no previous instance:
400 as from the kubelet).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from pykueue.api import validation as V
from pykueue.apiserver import errors as E

LogLocator = Callable[[Mapping[str, Any]], Path | None]
"""The runner's answer to "where are this pod's log files" (None: it has none)."""

CRI_LOG = "container.log"
"""The pod's log in the CRI log format (written by the pod shim)."""
LEGACY_FILES = (("stdout.log", b"stdout"), ("stderr.log", b"stderr"))
"""What older versions wrote instead: the raw output of each stream, no time per line."""
FOLLOW_POLL_SECONDS = 0.1
_ENDED = ("Succeeded", "Failed")
_CHUNK = 1024 * 1024
_RFC3339 = "2006-01-02T15:04:05Z07:00"


class Record(NamedTuple):
    """One record of the log: its time (RFC3339, nanoseconds, UTC), stream and content (with its
    newline when it ends a line, without when the line continues in the next record)."""

    timestamp: bytes
    stream: bytes
    content: bytes


def format_timestamp(ns: int) -> bytes:
    """``2006-01-02T15:04:05.000000000Z07:00`` of a UTC instant in nanoseconds (the kubelet's
    ``RFC3339NanoFixed``; fixed width, so timestamps compare as strings)."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return b"%s.%09dZ" % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)).encode(), nanos)


class LogOptions:
    """Parsed, validated ``PodLogOptions`` query parameters (``name``: the pod, for the error)."""

    def __init__(self, query: Mapping[str, Sequence[str]], name: str = "", now_ns: int | None = None) -> None:
        def last(key: str) -> str | None:
            values = query.get(key)
            return values[-1] if values else None

        self.container = last("container") or ""
        self.follow = _bool(last("follow"))
        self.previous = _bool(last("previous"))
        self.timestamps = _bool(last("timestamps"))
        self.tail_lines = _int(last("tailLines"))
        self.limit_bytes = _int(last("limitBytes"))
        since_seconds = _int(last("sinceSeconds"))
        since_text = last("sinceTime")
        since_time = _rfc3339(since_text) if since_text else None
        errors: list[V.FieldError] = []
        if self.tail_lines is not None and self.tail_lines < 0:
            errors.append(V.invalid("tailLines", self.tail_lines, "must be greater than or equal to 0"))
        if self.limit_bytes is not None and self.limit_bytes < 1:
            errors.append(V.invalid("limitBytes", self.limit_bytes, "must be greater than 0"))
        if since_seconds is not None and since_time is not None:
            errors.append(V.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
        elif since_seconds is not None and since_seconds < 1:
            errors.append(V.invalid("sinceSeconds", since_seconds, "must be greater than 0"))
        if errors:
            raise E.invalid("", "PodLogOptions", name, errors)
        # The kubelet's NewLogOptions: sinceSeconds counts back from when the request is served.
        self.since: bytes | None = None
        if since_seconds is not None:
            now = time.time_ns() if now_ns is None else now_ns
            self.since = format_timestamp(now - since_seconds * 1_000_000_000)
        elif since_time is not None:
            self.since = format_timestamp(since_time)


def _bool(value: str | None) -> bool:
    """``strconv.ParseBool``, as the query parameter codec decodes a bool."""
    if value is None or value == "":
        return False
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise E.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _int(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise E.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    return int(value)


_LAYOUT = (
    ("2006", r"[0-9]{4}"),
    ("-", "-"),
    ("01", r"[0-9]{2}"),
    ("-", "-"),
    ("02", r"[0-9]{2}"),
    ("T", "T"),
    ("15", r"[0-9]{2}"),
    (":", ":"),
    ("04", r"[0-9]{2}"),
    (":", ":"),
    ("05", r"[0-9]{2}(?:[.,][0-9]+)?"),
    ("Z07:00", r"Z|[+-][0-9]{2}:[0-9]{2}"),
)
_RANGES = ((2, 1, 12, "month"), (4, 1, 31, "day"), (6, 0, 23, "hour"), (8, 0, 59, "minute"), (10, 0, 59, "second"))


def _rfc3339(text: str) -> int:
    """A ``metav1.Time`` query parameter (``time.Parse(time.RFC3339, ...)``) as UTC nanoseconds;
    400 with Go's ``time.ParseError`` message when it is not one."""
    parts: list[str] = []
    pos = 0
    for element, pattern in _LAYOUT:
        match = re.compile(pattern).match(text, pos)
        if match is None:
            raise E.bad_request(f'parsing time "{text}" as "{_RFC3339}": cannot parse "{text[pos:]}" as "{element}"')
        parts.append(match.group())
        pos = match.end()
    if pos != len(text):
        raise E.bad_request(f'parsing time "{text}": extra text: "{text[pos:]}"')
    for index, low, high, what in _RANGES:
        if not low <= int(parts[index][:2]) <= high:
            raise E.bad_request(f'parsing time "{text}": {what} out of range')
    year, month, day = int(parts[0]), int(parts[2]), int(parts[4])
    if day > _days_in(year, month):
        raise E.bad_request(f'parsing time "{text}": day out of range')
    seconds = _days_from_civil(year, month, day) * 86400
    seconds += int(parts[6]) * 3600 + int(parts[8]) * 60 + int(parts[10][:2])
    fraction = parts[10][3:]
    nanos = int((fraction + "000000000")[:9]) if fraction else 0
    zone = parts[11]
    if zone != "Z":
        offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        seconds -= offset if zone[0] == "+" else -offset
    return seconds * 1_000_000_000 + nanos


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year 0000-9999)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def container_name(pod: Mapping[str, Any], requested: str) -> str:
    """The container whose log is asked for (``ValidateContainerLogStatus``-like checks)."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    init = [str(c.get("name")) for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
    if not requested:
        if len(names) == 1:
            return names[0]
        message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise E.bad_request(message)
    if requested not in names + init:
        raise E.bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def check_started(pod: Mapping[str, Any], container: str, previous: bool) -> None:
    """The kubelet's answers for a container with no log (yet, or no previous instance)."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    if previous:
        raise E.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting is not None:
            reason = waiting.get("reason") or "ContainerCreating"
            raise E.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
        return
    if status.get("phase") in (None, "", "Pending"):
        raise E.bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')


# -- reading the log ------------------------------------------------------------------------------


def parse_records(data: bytes) -> list[Record]:
    """The records of whole lines of a CRI log (``parseCRILog``); a malformed line is skipped, as
    the kubelet skips it."""
    records = []
    for line in data.split(b"\n")[:-1]:
        a = line.find(b" ")
        b = line.find(b" ", a + 1)
        c = line.find(b" ", b + 1)
        if a < 1 or c < 0:
            continue
        stream = line[a + 1 : b]
        if stream not in (b"stdout", b"stderr"):
            continue
        partial = line[b + 1 : c].split(b":")[0] == b"P"
        records.append(Record(line[:a], stream, line[c + 1 :] if partial else line[c + 1 :] + b"\n"))
    return records


def _tail_offset(f: BinaryIO, lines: int | None) -> int:
    """Where the last ``lines`` whole lines of ``f`` start (``tail.FindTailLineStartIndex``; an
    unfinished last line is not counted), reading backwards from the end."""
    if lines is None:
        return 0
    end = f.seek(0, os.SEEK_END)
    pos = end
    seen = -1  # newlines seen, the last one (ending the last whole line) not counted as a start
    while pos > 0:
        size = min(64 * 1024, pos)
        pos -= size
        f.seek(pos)
        block = f.read(size)
        at = len(block)
        while (at := block.rfind(b"\n", 0, at)) >= 0:
            seen += 1
            if seen == lines:
                return pos + at + 1
    return 0


class _CriLog:
    """The CRI log file, read from an offset on (whole records only)."""

    def __init__(self, path: Path, tail: int | None) -> None:
        self.path = path
        self.offset = 0
        with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
            self.offset = _tail_offset(f, tail)

    def read(self, final: bool = False) -> tuple[list[Record], bool]:
        """The records written since the last read (up to ``_CHUNK`` bytes) and whether more may
        be waiting. A record is written whole by the shim, so an unfinished one is still being
        written: it is read next time."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(_CHUNK)
        except FileNotFoundError:
            return [], False
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) == _CHUNK:
            cut = len(data)  # no record is that long: not a log line, skip it
        self.offset += cut
        return parse_records(data[:cut]), len(data) == _CHUNK


class _LegacyLogs:
    """``stdout.log`` / ``stderr.log`` of a pod started by an older version: stdout's lines then
    stderr's, each stamped with its file's modification time."""

    def __init__(self, directory: Path, tail: int | None) -> None:
        self.directory = directory
        self.offsets = dict.fromkeys((name for name, _ in LEGACY_FILES), 0)
        self.partial = dict.fromkeys(self.offsets, b"")
        self.tail = tail

    def read(self, final: bool = False) -> tuple[list[Record], bool]:
        records: list[Record] = []
        for name, stream in LEGACY_FILES:
            try:
                with open(self.directory / name, "rb") as f:
                    stamp = format_timestamp(os.fstat(f.fileno()).st_mtime_ns)
                    f.seek(self.offsets[name])
                    chunk = f.read()
            except FileNotFoundError:
                continue
            self.offsets[name] += len(chunk)
            text = self.partial[name] + chunk
            cut = text.rfind(b"\n") + 1
            self.partial[name] = b"" if final else text[cut:]
            if final and cut < len(text):
                # A last line without newline: stdout's ended before stderr's began (as before).
                text += b"\n" if stream == b"stdout" else b""
                cut = len(text)
            records += [Record(stamp, stream, line) for line in text[:cut].splitlines(keepends=True)]
        if self.tail is not None:
            records = records[len(records) - self.tail :] if self.tail else []
            self.tail = None
        return records, False


def _open(directory: Path, options: LogOptions) -> _CriLog | _LegacyLogs:
    if not (directory / CRI_LOG).exists() and any((directory / n).exists() for n, _ in LEGACY_FILES):
        return _LegacyLogs(directory, options.tail_lines)
    return _CriLog(directory / CRI_LOG, options.tail_lines)


class _Writer:
    """The kubelet's ``logWriter``: ``since``, ``timestamps`` and ``limitBytes`` applied to records."""

    def __init__(self, options: LogOptions) -> None:
        self.since = options.since
        self.timestamps = options.timestamps
        self.remain = options.limit_bytes
        self.new_line = True  # the next record starts a line (gets the timestamp)

    @property
    def done(self) -> bool:
        return self.remain is not None and self.remain <= 0

    def render(self, records: list[Record]) -> bytes:
        out = []
        for record in records:
            if self.done:
                break
            if self.since is None or record.timestamp >= self.since:
                line = record.content
                if self.timestamps and self.new_line:
                    line = record.timestamp + b" " + line
                if self.remain is not None:
                    line = line[: self.remain]
                    self.remain -= len(line)
                out.append(line)
            self.new_line = not record.content or record.content.endswith(b"\n")
        return b"".join(out)


def read_all(directory: Path, options: LogOptions) -> bytes:
    """The log as ``kubectl logs`` (without ``-f``) shows it, with every option applied."""
    source = _open(directory, options)
    writer = _Writer(options)
    parts = []
    more = True
    while more and not writer.done:
        records, more = source.read(final=True)
        parts.append(writer.render(records))
    return b"".join(parts)


def _read_chunks(source: _CriLog | _LegacyLogs, final: bool) -> Iterator[list[Record]]:
    more = True
    while more:
        records, more = source.read(final)
        yield records


async def follow(
    directory: Path,
    options: LogOptions,
    pod_ended: Callable[[], bool],
    send: Callable[[bytes], Awaitable[None]],
    disconnected: asyncio.Event,
) -> None:
    """Stream the log as the process writes it until the pod has ended (then the rest) or the client
    goes. File reads run off the event loop."""
    source = await asyncio.to_thread(_open, directory, options)
    writer = _Writer(options)
    while not disconnected.is_set():
        ended = pod_ended()
        more = True
        while more:
            records, more = await asyncio.to_thread(source.read, ended)
            data = writer.render(records)
            if data:
                await send(data)
            if writer.done:
                return
        if ended:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(disconnected.wait(), FOLLOW_POLL_SECONDS)


def stream_output(directory: Path, stream: str) -> bytes:
    """What the pod wrote to one stream (``stdout`` or ``stderr``), without times (for tests and
    tools that want a stream's own text)."""
    source = _open(directory, LogOptions({}))
    out = []
    for records in _read_chunks(source, True):
        out += [r.content for r in records if r.stream == stream.encode()]
    return b"".join(out)


def pod_has_ended(pod: Mapping[str, Any] | None) -> bool:
    """True once the pod is gone or in a terminal phase."""
    return pod is None or (pod.get("status") or {}).get("phase") in _ENDED
