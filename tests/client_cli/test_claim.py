"""``tripeaks claim`` and ``tripeaks whoami`` against a real server, the key file they
keep, and the client sending the key whenever it plays under the claimed name."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from client_cli.client import GameClient
from client_cli.keys import KeyFile, KeyFileError
from client_cli.net import ServerRefused
from protocol.wire.errors import ErrorCode
from server.race.identity import key_matches
from server.storage.players import Players
from tests.serverutil import running_server

ROOT = Path(__file__).resolve().parents[2]


async def tripeaks(config: Path, *args: str) -> tuple[int, str, str]:
    """The ``tripeaks`` command with ``config`` as its configuration directory."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "PYTHONPATH": str(ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client_cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_claim_keeps_a_key_only_its_owner_can_read_and_the_server_its_hash(
    tmp_path: Path,
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    async with running_server(tmp_path) as server:
        status, out, err = await tripeaks(mine, "claim", "Ann", "--server", server.ws_url)
        assert status == 0, err
        assert "'Ann' is yours" in out
        path = mine / "tripeaks" / "keys.json"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        key = json.loads(path.read_text())["names"]["ann"]["key"]
        claim = await Players(server.store).claim_of("ann")
        assert claim is not None and key_matches(key, claim.key_hash)
        # Claiming again from the same machine proves the same key; another machine fails.
        assert (await tripeaks(mine, "claim", "ANN", "--server", server.ws_url))[0] == 0
        status, _, err = await tripeaks(theirs, "claim", "ann", "--server", server.ws_url)
        assert status == 1
        assert "'ann' is already claimed by someone else" in err
        assert not (theirs / "tripeaks" / "keys.json").exists()


async def test_the_client_sends_the_key_of_a_claimed_name_and_is_refused_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "mine"
    async with running_server(tmp_path) as server:
        assert (await tripeaks(mine, "claim", "Ann", "--server", server.ws_url))[0] == 0
        monkeypatch.setenv("XDG_CONFIG_HOME", str(mine))
        client = GameClient(server.ws_url, "ann")
        welcome = await client.connect()
        assert welcome.name == "ann"
        await client.close()
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
        stranger = GameClient(server.ws_url, "Ann")
        with pytest.raises(ServerRefused) as refused:
            await stranger.connect()
        assert refused.value.code == ErrorCode.NAME_CLAIMED
        assert "claimed" in str(refused.value)
        await stranger.close()


async def test_whoami_says_whose_name_it_is_locally_and_on_the_server(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    async with running_server(tmp_path) as server:
        status, out, _ = await tripeaks(mine, "whoami", "--name", "Ann")
        assert status == 0 and "a guest: no key kept" in out
        status, out, _ = await tripeaks(mine, "whoami", "--name", "Ann", "--server", server.ws_url)
        assert "nobody has claimed 'Ann'" in out
        await tripeaks(mine, "claim", "Ann", "--server", server.ws_url)
        status, out, _ = await tripeaks(mine, "whoami", "--name", "ann", "--server", server.ws_url)
        assert status == 0
        assert "claimed as 'Ann'" in out and "'Ann' is claimed by you; rating 1000" in out
        _, out, _ = await tripeaks(theirs, "whoami", "--name", "Ann", "--server", server.ws_url)
        assert "claimed by someone else" in out


def test_a_broken_key_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{not json")
    with pytest.raises(KeyFileError, match="not valid JSON"):
        KeyFile(path).put("Ann", "k" * 43)
    assert path.read_text() == "{not json"


def test_the_key_file_finds_a_name_in_any_spelling(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "t" / "keys.json")
    keys.put("Ann", "a" * 43)
    keys.put("Bob", "b" * 43)
    stored = keys.get("ＡＮＮ")
    assert stored is not None and (stored.name, stored.key) == ("Ann", "a" * 43)
    assert keys.get("Cat") is None
    assert [k.name for k in keys.all()] == ["Ann", "Bob"]
