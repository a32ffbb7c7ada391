"""Fixtures of the cluster tests that need only Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.clusterutil import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server of this test's own, killed at the end."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.kill()
