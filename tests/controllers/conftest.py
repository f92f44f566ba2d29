"""The standby-manager harness of the Job tables (jobs/reconcile_harness.py) also drives the
tables of the other controllers in this directory: its directory is importable from here."""

from __future__ import annotations

import sys
from pathlib import Path

_HARNESS_DIR = str(Path(__file__).parent / "jobs")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)
