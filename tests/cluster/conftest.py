"""The real-cluster tier (tests/cluster): skipped, with the reason printed, without KUBEBUILDER_ASSETS.

See realcluster.py for how the real kube-apiserver is started and what the tests reuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realcluster import RealCluster, skip_reason, start_real_cluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every test of this directory, with the reason, when the assets are not there."""
    reason = skip_reason()
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"real-cluster tier: {reason}"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: runs against a real kube-apiserver (needs KUBEBUILDER_ASSETS)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say once, even without ``-rs``, that the tier was skipped and why."""
    reason = skip_reason()
    if reason:
        terminalreporter.write_line(f"tests/cluster: real-cluster tier skipped: {reason}", yellow=True)


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """One real control plane per test module."""
    cluster = start_real_cluster(tmp_path_factory.mktemp("real-cluster"))
    yield cluster
    cluster.stop()
