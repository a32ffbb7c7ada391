"""Shared fixtures.  Each fixture is small; helpers live in their own modules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from server.storage.store import RaceStore
from tests import pgutil


@pytest.fixture(autouse=True)
def _private_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients keep reconnect tokens under ``$XDG_STATE_HOME`` and the saved name under
    ``$XDG_CONFIG_HOME``, servers their default database and fallback file under
    ``$XDG_DATA_HOME``: never the real ones in tests."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))
    # ... and the keys of claimed names under $XDG_CONFIG_HOME.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[pgutil.PostgresCluster]:
    """A throwaway PostgreSQL server for the whole session, stopped at the end.

    Missing binaries skip the test on a developer machine but fail it in CI
    (``CI`` set), where .ci/run installs PostgreSQL; a server that will not
    start always fails.
    """
    cluster = pgutil.start_cluster_for_test()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: pgutil.PostgresCluster) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database, dropped after the test."""
    url = postgres_cluster.create_database()
    try:
        yield url
    finally:
        postgres_cluster.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on a fresh SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'races.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[RaceStore]:
    """A store opened (and migrated) on :func:`db_url`, closed after the test."""
    opened = await RaceStore.connect(db_url)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[RaceStore]:
    """A store on a fresh SQLite file (where the input log has its own thread and tails),
    closed after the test."""
    opened = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    try:
        yield opened
    finally:
        await opened.close()
