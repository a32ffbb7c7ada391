"""A WebSocket upgrade over the connect rate: its 429, and what a reconnecting flood costs.

A client can reconnect at will, so each refused upgrade must stay cheap: its
log line is throttled and its answer is built once.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import aiohttp
import pytest

from protocol.wire import codec
from server import logs
from tests.serverutil import running_server

REFUSED_UPGRADES = 40
_UPGRADE = {
    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Protocol": codec.SUBPROTOCOL_MSGPACK,
}


async def test_a_flood_of_refused_upgrades_gets_json_429s_and_logs_at_most_a_few_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=logs.LOGGER.name)
    async with running_server(tmp_path, connect_burst=1.0, connect_rate=0.01) as server:
        http_url = server.ws_url.replace("ws://", "http://", 1)
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(server.ws_url, protocols=(codec.SUBPROTOCOL_MSGPACK,)):
                pass
            for _ in range(REFUSED_UPGRADES):
                async with http.get(http_url, headers=_UPGRADE) as response:
                    assert response.status == 429
                    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
                    assert json.loads(await response.read()) == {
                        "error": "too many connections from your address; slow down"
                    }
    lines = [r for r in caplog.records if r.getMessage() == "connect_rate_limited"]
    assert len(lines) <= logs.THROTTLE_LINES < REFUSED_UPGRADES
