"""``tripeaks daily`` and ``tripeaks bot --daily`` against a real server."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from client_cli.daily import check_day, leaderboard_lines
from server.race.daily import DAY_MS, day_start_ms
from tests.serverutil import running_server

NOON = day_start_ms("2031-03-14") + DAY_MS // 2
ROOT = Path(__file__).resolve().parents[2]


async def tripeaks(*args: str) -> tuple[int, str, str]:
    """Run the terminal client with ``args``; its status, stdout and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client_cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_bot_plays_the_daily_and_the_day_checks_once_it_is_over(tmp_path) -> None:
    async with running_server(tmp_path) as server:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        status, out, err = await tripeaks("bot", "--daily", "--pace", "0", "--name", "robo",
                                          "--server", server.ws_url)
        assert status == 0, err
        assert "daily deal 2031-03-14" in out and "revealed once that day is over" in out
        assert "seed:" not in out
        status, out, err = await tripeaks("daily", "--leaderboard", "--server", server.ws_url)
        assert status == 0, err
        assert "2031-03-14 (still open; 1 unranked" in out
        assert "--ghost" not in out
        status, out, err = await tripeaks("daily", "--check", "2031-03-14",
                                          "--server", server.ws_url)
        assert status == 1 and "not over yet" in out
        server.hub.shift_clock(DAY_MS)
        status, out, err = await tripeaks("daily", "--check", "2031-03-14",
                                          "--server", server.ws_url)
        assert status == 0, out + err
        assert "commitment ✔, deal ✔, winning line ✔" in out


async def test_a_day_the_server_never_dealt_is_a_clear_error(tmp_path) -> None:
    async with running_server(tmp_path) as server:
        status, _, err = await tripeaks("daily", "--check", "2001-01-01",
                                        "--server", server.ws_url)
        assert status == 2 and "404" in err and "no daily deal for 2001-01-01" in err


def test_a_tampered_seed_fails_the_check() -> None:
    doc = {"day": "2031-03-14", "revealed": True, "wrap": True, "empty_waste": False,
           "commitment": "0" * 64, "seed": "42", "candidate": 0,
           "deal": {"peaks": [], "waste": None, "stock": []}, "solution": []}
    lines, ok = check_day(doc)
    assert not ok and "commitment ✗" in lines[1]


def test_the_leaderboard_offers_a_ghost_only_once_the_day_is_over() -> None:
    entry = {"rank": 1, "name": "ann", "bot": False, "status": "finished", "finish_ms": 61_000,
             "cleared": 28, "moves": 50}
    doc = {"day": "2031-03-14", "revealed": False, "unranked": 0, "humans": [entry], "bots": []}
    assert "--ghost" not in "\n".join(leaderboard_lines(doc))
    doc = {**doc, "revealed": True,
           "humans": [{**entry, "race_id": "r1", "player_id": "p1"}]}
    text = "\n".join(leaderboard_lines(doc))
    assert "finished in 61.0 s" in text and "--ghost r1:p1" in text


async def test_a_bot_whose_name_was_claimed_plays_the_daily_once_ranked(tmp_path) -> None:
    async with running_server(tmp_path) as server:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        status, out, err = await tripeaks("claim", "robo1", "--server", server.ws_url)
        assert status == 0, out + err
        bot = ("bot", "--daily", "--pace", "0", "--name", "robo", "--server", server.ws_url)
        status, out, err = await tripeaks(*bot)
        assert status == 0, out + err
        status, out, err = await tripeaks("daily", "--leaderboard", "--server", server.ws_url)
        assert "(still open; 0 unranked" in out
        bots = out.split("bots:")[1]
        assert "1. robo1" in bots
        status, out, err = await tripeaks(*bot)
        assert "played the daily deal of 2031-03-14 already" in out + err
