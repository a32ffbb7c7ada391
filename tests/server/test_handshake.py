"""The WebSocket handshake: an offer of only unknown subprotocols is refused over HTTP.

Answering 101 without a ``Sec-WebSocket-Protocol`` header and then closing with
4005 reached no real client (browsers and libraries give up on such an answer
themselves and report 1006), so the server refuses the upgrade with HTTP 400
and a JSON body naming the subprotocols it speaks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
import websockets
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from protocol.wire import codec
from protocol.wire import messages as m
from tests.serverutil import running_server


async def test_a_client_offering_only_unknown_subprotocols_sees_http_400_naming_the_known_ones(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        offer = [Subprotocol("chat"), Subprotocol("tripeaks.v3.json")]
        with pytest.raises(InvalidStatus) as refused:
            await websockets.connect(server.ws_url, subprotocols=offer)
        response = refused.value.response
        assert response.status_code == 400
        assert response.headers["Content-Type"].startswith("application/json")
        body = json.loads(response.body)
        assert body["subprotocols"] == list(codec.SUBPROTOCOLS)
        assert "tripeaks.v1.msgpack" in body["error"] and "tripeaks.v1.json" in body["error"]
        assert not server.hub.connections


async def test_aiohttp_sees_the_same_refusal(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(server.ws_url, protocols=["chat"])
        assert refused.value.status == 400


async def test_an_unknown_subprotocol_before_a_known_one_still_connects(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        offer = [Subprotocol("chat"), Subprotocol(codec.SUBPROTOCOL_JSON)]
        async with websockets.connect(server.ws_url, subprotocols=offer) as ws:
            assert ws.subprotocol == codec.SUBPROTOCOL_JSON
            await ws.send(codec.encode_json(m.Hello(name="ann", version=m.PROTOCOL_VERSION)))
            welcome = codec.decode_server(await asyncio.wait_for(ws.recv(), 5), "json")
            assert isinstance(welcome, m.Welcome)


async def test_protocol_md_shows_the_body_the_server_sends(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text("utf-8")
    section = doc[doc.index("## Connecting"):doc.index("## Encoding")]
    shown = json.loads(section.split("```json")[1].split("```")[0])
    async with running_server(tmp_path) as server:
        with pytest.raises(InvalidStatus) as refused:
            await websockets.connect(server.ws_url, subprotocols=[Subprotocol("chat")])
    assert json.loads(refused.value.response.body) == shown
