"""``pykueue serve --config`` admits with the Configuration's feature gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykueue.apiserver import server
from pykueue.cli.main import build_parser
from pykueue.cli.serve import run


def test_serve_admits_with_the_configs_feature_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """serve's API runs Kueue's validating webhooks, which upstream runs in the controller
    manager with its Configuration's ``featureGates``: the same gates the controllers get."""
    config = tmp_path / "kueue.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
        "featureGates:\n  ConcurrentAdmission: true\n  TASValidateWorkloadSliceSize: false\n"
    )
    seen: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda options, *a, **kw: seen.append(options) or 0)
    for argv in ((), ("--config", str(config))):
        assert run(build_parser().parse_args(["serve", "--data-dir", str(tmp_path / "d"), *argv])) == 0
    default, configured = (options.gates for options in seen)
    assert not default.enabled("ConcurrentAdmission") and default.enabled("TASValidateWorkloadSliceSize")
    assert configured.enabled("ConcurrentAdmission") and not configured.enabled(
        "TASValidateWorkloadSliceSize"
    )
