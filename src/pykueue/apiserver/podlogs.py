"""The ``pods/log`` subresource: ``GET /api/v1/namespaces/{ns}/pods/{name}/log``.

On a cluster kube-apiserver proxies this to the pod's kubelet; in ``pykueue serve`` the local job
runner is the kubelet, and it keeps each pod's ``stdout.log`` / ``stderr.log`` in its record
directory. The runner registers a :data:`LogLocator` on the application (``APIServerApp.pod_logs``):
given the stored Pod object it answers that pod's record directory, or None. Nothing in the Pod
object names a path; the runner checks that the record belongs to the pod (its uid).

Options as ``PodLogOptions``: ``container`` (required when the pod has several containers),
``follow`` (stream as the process writes, until the pod has ended), ``tailLines``, ``limitBytes``,
``previous`` (a pod of the runner never restarts a container, so there is no previous instance:
400 as from the kubelet). ``sinceSeconds``, ``sinceTime`` and ``timestamps`` need the time of
each line, which the runner's log files do not record: they are refused with 400 rather than
ignored. The stdout lines come before the stderr lines (the files are separate; only ``follow``
interleaves them in the order they are read).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pykueue.apiserver import errors as E

LogLocator = Callable[[Mapping[str, Any]], Path | None]
"""The runner's answer to "where are this pod's log files" (None: it has none)."""

LOG_FILES = ("stdout.log", "stderr.log")
FOLLOW_POLL_SECONDS = 0.1
_ENDED = ("Succeeded", "Failed")
_CHUNK = 64 * 1024


class LogOptions:
    """Parsed, validated ``PodLogOptions`` query parameters."""

    def __init__(self, query: Mapping[str, Sequence[str]]) -> None:
        def last(name: str) -> str | None:
            values = query.get(name)
            return values[-1] if values else None

        self.container = last("container") or ""
        self.follow = _bool(last("follow"), "follow")
        self.previous = _bool(last("previous"), "previous")
        self.tail_lines = _non_negative(last("tailLines"), "tailLines")
        self.limit_bytes = _non_negative(last("limitBytes"), "limitBytes")
        if self.limit_bytes is not None and self.limit_bytes < 1:
            raise _invalid("limitBytes", self.limit_bytes, "must be greater than 0")
        since_seconds = _non_negative(last("sinceSeconds"), "sinceSeconds")
        if since_seconds is not None and since_seconds < 1:
            raise _invalid("sinceSeconds", since_seconds, "must be greater than 0")
        if since_seconds is not None and last("sinceTime"):
            raise E.bad_request("at most one of `sinceTime` or `sinceSeconds` may be specified")
        for name in ("sinceSeconds", "sinceTime"):
            if last(name):
                raise E.bad_request(
                    f"{name} is not supported: the local job runner's log files do not record when each "
                    "line was written"
                )
        if _bool(last("timestamps"), "timestamps"):
            raise E.bad_request(
                "timestamps is not supported: the local job runner's log files do not record when each "
                "line was written"
            )


def _invalid(name: str, value: int, message: str) -> E.APIError:
    return E.bad_request(f"{name}: Invalid value: {value}: {message}")


def _bool(value: str | None, name: str) -> bool:
    if value is None or value == "":
        return False
    lowered = value.lower()
    if lowered in ("true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise E.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _non_negative(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise E.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None
    if number < 0:
        raise _invalid(name, number, "must be greater than or equal to 0")
    return number


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


def read_all(directory: Path, options: LogOptions) -> bytes:
    """The whole log (stdout then stderr), with ``tailLines`` and ``limitBytes`` applied."""
    data = b""
    for file_name in LOG_FILES:
        with contextlib.suppress(FileNotFoundError):
            chunk = (directory / file_name).read_bytes()
            if chunk and not chunk.endswith(b"\n") and file_name != LOG_FILES[-1]:
                chunk += b"\n"
            data += chunk
    if options.tail_lines is not None:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[len(lines) - options.tail_lines :]) if options.tail_lines else b""
    if options.limit_bytes is not None:
        data = data[: options.limit_bytes]
    return data


class _Tail:
    """Reads what was appended to the log files since the last call (whole lines only)."""

    def __init__(self, directory: Path, offsets: dict[str, int]) -> None:
        self.directory = directory
        self.offsets = offsets
        self.partial = {name: b"" for name in LOG_FILES}

    def read(self, final: bool) -> bytes:
        out = b""
        for name in LOG_FILES:
            try:
                with open(self.directory / name, "rb") as f:
                    f.seek(self.offsets.get(name, 0))
                    chunk = f.read(_CHUNK * 16)
            except FileNotFoundError:
                continue
            self.offsets[name] = self.offsets.get(name, 0) + len(chunk)
            text = self.partial[name] + chunk
            if final:
                self.partial[name] = b""
                if text and not text.endswith(b"\n"):
                    text += b"\n"
                out += text
                continue
            cut = text.rfind(b"\n") + 1
            out += text[:cut]
            self.partial[name] = text[cut:]
        return out


def initial_offsets(directory: Path, options: LogOptions) -> tuple[bytes, dict[str, int]]:
    """The first part of a followed log (the whole log, or its ``tailLines``) and where it ends."""
    offsets = {}
    for name in LOG_FILES:
        try:
            offsets[name] = os.stat(directory / name).st_size
        except FileNotFoundError:
            offsets[name] = 0
    head = b""
    for name in LOG_FILES:
        with contextlib.suppress(FileNotFoundError), open(directory / name, "rb") as f:
            head += f.read(offsets[name])
    cut = head.rfind(b"\n") + 1
    head, rest = head[:cut], head[cut:]
    # An unfinished last line is sent once it is finished: step its file's offset back over it.
    if rest:
        for name in reversed(LOG_FILES):
            if offsets[name]:
                offsets[name] -= min(len(rest), offsets[name])
                break
    if options.tail_lines is not None:
        lines = head.splitlines(keepends=True)
        head = b"".join(lines[len(lines) - options.tail_lines :]) if options.tail_lines else b""
    return head, offsets


async def follow(
    directory: Path,
    options: LogOptions,
    pod_ended: Callable[[], bool],
    send: Callable[[bytes], Awaitable[None]],
    disconnected: asyncio.Event,
) -> None:
    """Stream the log as the process writes it until the pod has ended (then the rest) or the client
    goes. File reads run off the event loop."""
    head, offsets = await asyncio.to_thread(initial_offsets, directory, options)
    budget = options.limit_bytes
    tail = _Tail(directory, offsets)

    async def emit(data: bytes) -> bool:
        nonlocal budget
        if budget is not None:
            data = data[:budget]
            budget -= len(data)
        if data:
            await send(data)
        return budget is None or budget > 0

    if not await emit(head):
        return
    while not disconnected.is_set():
        ended = pod_ended()
        data = await asyncio.to_thread(tail.read, ended)
        if not await emit(data) or ended:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(disconnected.wait(), FOLLOW_POLL_SECONDS)


def pod_has_ended(pod: Mapping[str, Any] | None) -> bool:
    """True once the pod is gone or in a terminal phase."""
    return pod is None or (pod.get("status") or {}).get("phase") in _ENDED
