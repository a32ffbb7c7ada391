"""The input log's appends in Redis (:data:`server.cluster.scripts.APPEND`), against a real
redis-server: every entry of a held room read back as it was given, a retried append
writing each index once, and rooms not held fenced out, each named once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.cluster import keys
from server.cluster.directory import Directory
from tests.cluster.clusterutil import RedisServer

LEASE_MS = 60_000
#: Entries as the journal writes them (one line of JSON each), and the awkward cases:
#: quotes, backslashes, text beyond ASCII and beyond the Basic Multilingual Plane.
DATA = ['{"t":"moved","p":"p1","s":1}', '{"n":"q\\"uote \\\\ back"}', '{"n":"ü 😀 漢"}']


@pytest.fixture
async def directory(redis_server: RedisServer) -> AsyncIterator[Directory]:
    found = Directory.connect(redis_server.url)
    yield found
    await found.close()


async def _held(directory: Directory, *codes: str) -> dict[str, tuple[str, int]]:
    """Claim ``codes`` for node ``a``: each one's owner value and epoch."""
    epochs = await directory.claim(list(codes), "a", LEASE_MS)
    return {code: (keys.owner_value("a", epoch), epoch) for code, epoch in epochs.items()}


async def test_the_entries_of_every_held_room_are_read_back_as_given(
    directory: Directory,
) -> None:
    held = await _held(directory, "AAAAAA", "BBBBBB")
    (value_a, epoch_a), (value_b, _epoch_b) = held["AAAAAA"], held["BBBBBB"]
    fenced = await directory.append([
        ("AAAAAA", value_a, epoch_a, 0, DATA),
        ("BBBBBB", value_b, 2**40, 10**6, ["{}"]),
    ])
    assert fenced == []
    assert await directory.read_log("AAAAAA") == [
        (index, epoch_a, data) for index, data in enumerate(DATA)
    ]
    assert await directory.read_log("BBBBBB") == [(10**6, 2**40, "{}")]
    assert await directory.log_rooms() == ["AAAAAA", "BBBBBB"]


async def test_a_retried_append_writes_each_index_once(directory: Directory) -> None:
    value, epoch = (await _held(directory, "AAAAAA"))["AAAAAA"]
    await directory.append([("AAAAAA", value, epoch, 0, DATA[:2])])
    # The answer was lost: the same entries again, and one more.
    await directory.append([("AAAAAA", value, epoch, 0, [*DATA[:2], DATA[2]])])
    # Two runs of one room in one append, the second going on from the first.
    await directory.append([
        ("AAAAAA", value, epoch, 3, ["{}"]), ("AAAAAA", value, epoch, 4, ["[]"]),
    ])
    log = await directory.read_log("AAAAAA")
    assert [index for index, _epoch, _data in log] == [0, 1, 2, 3, 4]
    assert [data for _index, _epoch, data in log] == [*DATA, "{}", "[]"]


async def test_rooms_not_held_as_expected_are_fenced_out_and_named_once(
    directory: Directory,
) -> None:
    value, epoch = (await _held(directory, "AAAAAA"))["AAAAAA"]
    fenced = await directory.append([
        ("CCCCCC", "a:1", 1, 0, ["{}"]),  # nobody holds it
        ("AAAAAA", "b:9", 9, 0, ["{}"]),  # held, by another owner than the one given
        ("CCCCCC", "a:1", 1, 1, ["{}"]),
        ("AAAAAA", value, epoch, 0, DATA),
    ])
    assert fenced == ["CCCCCC", "AAAAAA"]  # in the order first met, each once
    # Fenced runs wrote nothing; the run given the right owner was written.
    assert await directory.read_log("CCCCCC") == []
    assert await directory.read_log("AAAAAA") == [
        (index, epoch, data) for index, data in enumerate(DATA)
    ]
