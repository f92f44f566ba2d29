"""The open-file limit is raised at start and the connection cap fits under it."""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterator

import pytest

from pykueue.apiserver.protocol import ConnectionLimits
from pykueue.apiserver.server import connection_limits, raise_open_file_limit


@pytest.fixture
def restore_nofile() -> Iterator[tuple[int, int]]:
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_soft_open_file_limit_is_raised_to_the_hard_limit(
    restore_nofile: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    _, hard = restore_nofile
    if hard == resource.RLIM_INFINITY or hard < 512:
        pytest.skip("needs a finite hard limit of at least 512")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    with caplog.at_level(logging.INFO, logger="pykueue.apiserver"):
        assert raise_open_file_limit() == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    assert f"raised the open-file limit (RLIMIT_NOFILE) from 256 to {hard}" in caplog.text


def test_connection_cap_is_lowered_to_fit_the_open_file_limit(caplog: pytest.LogCaptureFixture) -> None:
    wanted = ConnectionLimits(idle=120, header=32, body=60, max_connections=10_000)
    assert connection_limits(wanted, 1_048_576) == wanted
    with caplog.at_level(logging.WARNING, logger="pykueue.apiserver"):
        lowered = connection_limits(wanted, 1024)
    assert lowered.max_connections == 1024 - 102 and lowered.idle == 120 and lowered.header == 32
    assert "--max-connections 10000 exceeds what the open-file limit 1024 allows" in caplog.text
    assert connection_limits(wanted, 20_000).max_connections == 10_000
