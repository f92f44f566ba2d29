"""The import rules of docs/architecture.md hold, and the check really catches a forbidden import.

``lint-imports`` (import-linter) reads the contracts in pyproject.toml. The second test runs it
over a copy of the package in which ``checks`` imports ``controllers`` and expects it to fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


def _lint(cwd: Path, src: Path) -> subprocess.CompletedProcess[str]:
    assert LINT is not None, "import-linter is a [test] dependency"
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run(
        [LINT, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def lint_available() -> None:
    if LINT is None:
        pytest.fail("lint-imports not found: install the [test] extras")


def test_contracts_are_kept(lint_available: None) -> None:
    out = _lint(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_a_forbidden_import_breaks_a_contract(lint_available: None, tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "src" / "pykueue", tmp_path / "src" / "pykueue", ignore=shutil.ignore_patterns("__pycache__"))
    states = tmp_path / "src" / "pykueue" / "checks" / "states.py"
    states.write_text(states.read_text() + "\nimport pykueue.controllers.manager  # forbidden: checks -> controllers\n")
    out = _lint(tmp_path, tmp_path / "src")
    assert out.returncode != 0, out.stdout
    assert "checks never imports controllers BROKEN" in out.stdout
    assert "pykueue.checks.states -> pykueue.controllers.manager" in out.stdout
