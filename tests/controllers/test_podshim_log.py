"""The pod shim's log: stdout and stderr captured line by line in the kubelet's CRI log format.

The shim runs as the job runner starts it (``python -I -S podshim.py DIR``, the spec on stdin)
and the log is read back as ``pods/log`` reads it.
"""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from pykueue.apiserver import podlogs
from pykueue.controllers import podshim

RECORD = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) (stdout|stderr) ([PF]) (.*)")


def start_pod(record: Path, script: str, log: Path, timeout: float = 30) -> dict[str, object]:
    """Run ``sh -c script`` under the shim; what it recorded in ``exit``."""
    spec = {
        "argv": ["sh", "-c", script],
        "env": {"PATH": "/usr/bin:/bin"},
        "cwd": str(record.parent),
        "log": str(log),
    }
    shim = subprocess.Popen(
        [sys.executable, "-I", "-S", podshim.__file__, str(record)], stdin=subprocess.PIPE, start_new_session=True
    )
    assert shim.stdin is not None
    shim.stdin.write(marshal.dumps(spec))
    shim.stdin.close()
    assert shim.wait(timeout=timeout) == 0
    result: dict[str, object] = json.loads((record / "exit").read_text())
    return result


def run_pod(tmp_path: Path, script: str, timeout: float = 30) -> tuple[list[tuple[bytes, bytes, bytes, bytes]], Path]:
    """Run ``sh -c script`` under the shim; the parsed records of its log and the record directory."""
    record = tmp_path / "record"
    record.mkdir(mode=0o700)
    assert start_pod(record, script, record / podlogs.CRI_LOG, timeout) == {"exitCode": 0}
    records = []
    for line in (record / podlogs.CRI_LOG).read_bytes().split(b"\n")[:-1]:
        match = RECORD.fullmatch(line)
        assert match is not None, line
        records.append((match[1], match[2], match[3], match[4]))
    return records, record


def _time(stamp: bytes) -> datetime:
    return datetime.fromisoformat(stamp[:26].decode() + "+00:00")


def test_streams_interleaved_in_the_order_written_with_a_time_per_line(tmp_path: Path) -> None:
    # Two pipes: the order across them is the order the shim read them in. Each line is written
    # once the shim has logged the one before (a fixed pause lets a busy shim read two at once).
    def logged(line: str) -> str:
        return f"until grep -q ' {line}$' record/{podlogs.CRI_LOG}; do sleep 0.01; done"

    script = (
        f"echo out1; {logged('out1')}; echo err1 >&2; {logged('err1')}; echo out2; {logged('out2')}; "
        "sleep 1; echo err2 >&2"
    )
    records, record = run_pod(tmp_path, script)
    assert [(r[1], r[2], r[3]) for r in records] == [
        (b"stdout", b"F", b"out1"), (b"stderr", b"F", b"err1"), (b"stdout", b"F", b"out2"), (b"stderr", b"F", b"err2"),
    ]  # fmt: skip
    times = [_time(r[0]) for r in records]
    assert times == sorted(times)
    assert (times[3] - times[2]).total_seconds() >= 0.9  # stamped when written, not when the pod ended
    assert abs((datetime.now(times[0].tzinfo) - times[0]).total_seconds()) < 60
    assert podlogs.read_all(record, podlogs.LogOptions({})) == b"out1\nerr1\nout2\nerr2\n"


def test_long_lines_are_split_as_containerd_splits_them_and_read_back_whole(tmp_path: Path) -> None:
    # 40000 "x" then newline; then 16384 exactly; then an unterminated last line.
    script = (
        "head -c 40000 /dev/zero | tr '\\0' x; echo; head -c 16384 /dev/zero | tr '\\0' y; echo; printf 'no newline'"
    )
    records, record = run_pod(tmp_path, script)
    shape = [(r[2], len(r[3])) for r in records]
    assert shape == [(b"P", 16384), (b"P", 16384), (b"F", 7232), (b"F", 16384), (b"P", 10)]
    assert podlogs.read_all(record, podlogs.LogOptions({})) == b"x" * 40000 + b"\n" + b"y" * 16384 + b"\nno newline"


def test_more_output_than_a_pipe_holds_is_all_kept(tmp_path: Path) -> None:
    records, record = run_pod(tmp_path, "seq 1 200000; seq 1 1000 >&2")
    out = podlogs.stream_output(record, "stdout").split()
    assert len(out) == 200000 and out[-1] == b"200000"
    assert len([r for r in records if r[1] == b"stderr"]) == 1000


def test_a_process_left_holding_stdout_does_not_keep_the_pod(tmp_path: Path) -> None:
    """The main process exits while a background process still has the pipes: it dies with the
    pod, what it wrote is kept, and the shim does not wait for the pipes to close on their own."""
    start = time.monotonic()
    records, _ = run_pod(tmp_path, "(echo from background; exec sleep 60) & sleep 0.3; echo main done", timeout=20)
    assert time.monotonic() - start < 15
    assert sorted(r[3] for r in records) == [b"from background", b"main done"]


def test_a_log_that_cannot_be_opened_fails_the_start_and_runs_nothing(tmp_path: Path) -> None:
    record = tmp_path / "record"
    record.mkdir(mode=0o700)
    marker = tmp_path / "ran"
    result = start_pod(record, f"touch {marker}", tmp_path / "missing" / podlogs.CRI_LOG)
    assert str(result["startError"]).startswith("opening the pod's log: [Errno 2] No such file or directory")
    assert not marker.exists()
