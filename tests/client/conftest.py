"""Fixtures of the HTTP client tests: a real ``pykueue serve`` per module, clients, own servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpclient_support import Starter, client_of, serving, starting

from pykueue.client.http import HTTPClient


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One API-only server per module (tests use distinct object names)."""
    yield from serving(tmp_path_factory.mktemp("serve"))


@pytest.fixture
def client(server: Any) -> Iterator[HTTPClient]:
    """An HTTP client of the module's server."""
    yield from client_of(server)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Starter]:
    """Servers of the test's own, e.g. ``start("--watch-history", "5")``."""
    yield from starting(tmp_path)
