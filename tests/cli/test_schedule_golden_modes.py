"""``pykueue schedule`` on every file in ``examples/``, in every output mode, pinned byte for byte.

The core's modules move between packages (issue 13); the command's output must not change by a
byte. Each case stores exit code, stdout and stderr in ``golden/schedule/<file>.<mode>.txt``,
generated from the code before the moves. Regenerate only after an intended behaviour change with
``PYKUEUE_UPDATE_GOLDEN=1 pytest tests/cli/test_schedule_golden_modes.py``.

The command runs in-process (``pykueue.cli.main.main``), so the 100-odd cases take seconds, not
minutes; ``test_schedule_cli.py`` already runs it as a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from pykueue.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden" / "schedule"
NOW = "2026-01-01T00:01:00Z"

# every YAML file under examples/, the goldens of test_schedule_cli excepted (they are outputs);
# two are inputs of other options, not states, and their goldens pin schedule's error for a
# document that is not a Kubernetes object or not a state kind: checks/provisioner-capacity.yaml
# (``pykueue serve --provisioner``, README "A local provisioner") and fair-sharing-config.yaml
# (``--config``)
FILES = sorted(
    p.relative_to(ROOT).as_posix() for p in EXAMPLES.rglob("*.yaml") if "golden" not in p.relative_to(EXAMPLES).parts
)
# extra arguments an example needs to mean what it says
EXTRA = {"examples/fair-sharing.yaml": ["--config", "examples/fair-sharing-config.yaml"]}
MODES = {
    "one-cycle": [],
    "quiet": ["--until-quiet"],
    "json": ["--until-quiet", "-o", "json"],
    "explain": ["--until-quiet", "--explain", "--show-events"],
    "explain-json": ["--until-quiet", "--explain", "-o", "json"],
    "cycles3-events": ["--cycles", "3", "--show-events"],
}


def _run(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse errors
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(cwd)
    return f"rc: {rc}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


def test_examples_found() -> None:
    assert "examples/quickstart.yaml" in FILES and "examples/preemption.yaml" in FILES


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("path", FILES)
def test_schedule_output_unchanged(path: str, mode: str) -> None:
    argv = ["schedule", "-f", path, "--now", NOW, *MODES[mode], *EXTRA.get(path, [])]
    got = _run(argv)
    golden = GOLDEN / f"{path.removeprefix('examples/').replace('/', '__').removesuffix('.yaml')}.{mode}.txt"
    if os.environ.get("PYKUEUE_UPDATE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text(), f"{' '.join(argv)}: output differs from {golden.name}"
