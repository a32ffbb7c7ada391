"""Smoke test of the load benchmark harness: it runs end to end at a tiny scale.

This checks that every figure is produced and that every process the
harness starts is gone afterwards; it asserts nothing about performance
(performance is measured only by ``make bench-load``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psutil
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from prometheus_client.parser import text_string_to_metric_families

from bench.echo_server import make_app
from bench.load import QUICK, Bench, burst_figures
from bench.load_game import move_frame, peek_tag
from bench.load_procs import FILES_BESIDES_SOCKETS, players_within
from bench.load_run import WindowResult, log_figures, parse_log_figures, scraped_log_figures
from bench.load_stats import Histogram
from bench.load_wire import WireClient, WireError, connect, frame
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.fast import progress_msgpack, update_msgpack
from tests.protocol.wire.test_codec_roundtrip import message_strategy
from tests.serverutil import move_request, open_room, running_server

ROOT = Path(__file__).resolve().parents[2]

RACE_FIGURES = (
    "rtt", "accepted_moves_per_s", "server_frames_per_s", "server_cpu_pct", "server_rss_mib",
    "generator_cpu_pct", "generator_saturated", "fanout",
)


#: Set to a fresh value for the quick run: every process it starts inherits
#: it, so a benchmark someone else runs on the machine is never counted.
RUN_TAG = "TRIPEAKS_BENCH_SMOKE_RUN"


def _bench_processes(tag: str) -> set[int]:
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "bench.load_worker" in cmdline or "bench.echo_server" in cmdline:
            try:
                if proc.environ().get(RUN_TAG) == tag:
                    found.add(proc.pid)
            except psutil.Error:  # gone meanwhile, or not ours to read
                continue
    return found


@pytest.fixture(scope="module")
def quick_figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("bench") / "load.json"
    tag = uuid.uuid4().hex
    done = subprocess.run(
        [sys.executable, "-m", "bench.load", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
        env=dict(os.environ, **{RUN_TAG: tag}),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "targets" in done.stdout
    figures: dict[str, object] = json.loads(out.read_text())
    figures["_leftover"] = sorted(_bench_processes(tag))
    return figures


def test_quick_run_reports_every_figure_the_issue_lists(quick_figures: dict) -> None:
    for run in ("human", "saturation", "interference"):
        for key in RACE_FIGURES:
            assert key in quick_figures[run], (run, key)
        assert quick_figures[run]["rtt"]["count"] > 0
        assert quick_figures[run]["rtt"]["p99_9_ms"] is not None
        assert quick_figures[run]["accepted_moves_per_s"] > 0
        # The kernel's share is part of the server's CPU, never more than all of it.
        system = quick_figures[run]["server_cpu_system_pct"]
        assert 0 <= system <= quick_figures[run]["server_cpu_pct"] + 1, run
        # Every move is logged before its answer: the window saw commits, read from /metrics.
        assert quick_figures[run]["log_commits"] > 0, run
        assert 0 <= quick_figures[run]["log_commits_over_50ms"] <= quick_figures[run]["log_commits"]
        steps = quick_figures[run]["log_fold_steps"]
        assert 0 <= quick_figures[run]["log_fold_steps_over_10ms"] <= steps, run
    for step in quick_figures["capacity"]["steps"]:
        assert 0 <= step["server_cpu_system_pct"] <= step["server_cpu_pct"] + 1
        assert step["log_commits_over_50ms"] >= 0
        assert step["log_fold_steps_over_10ms"] >= 0
    assert quick_figures["human"]["room_start"]["p99_ms"] is not None
    assert quick_figures["interference"]["room_start"]["count"] == quick_figures["scale"]["burst"]
    assert quick_figures["interference"]["rtt_during_burst"]["count"] > 0
    assert quick_figures["echo"]["round_trips_per_s"] > 0
    assert quick_figures["idle"]["kib_per_player"] is not None
    assert isinstance(quick_figures["ratio_game_to_echo"], float)
    assert quick_figures["capacity"]["steps"]
    assert quick_figures["machine"]["nproc"] >= 1


def test_quick_run_moves_are_all_legal_and_answered(quick_figures: dict) -> None:
    for run in ("human", "saturation", "interference"):
        assert quick_figures[run]["rejected_moves"] == 0
        assert quick_figures[run]["in_flight_at_end"] <= quick_figures[run]["players"]


def test_quick_run_leaves_no_generator_or_echo_process_behind(quick_figures: dict) -> None:
    assert quick_figures["_leftover"] == []


def test_histogram_percentiles_use_nearest_rank_within_one_percent() -> None:
    hist = Histogram()
    for micros in range(1, 10_001):
        hist.record(micros / 1_000_000)
    assert hist.percentile_ms(50) == pytest.approx(5.0, rel=0.01)
    assert hist.percentile_ms(99) == pytest.approx(9.9, rel=0.01)
    assert hist.percentile_ms(99.9) == pytest.approx(9.99, rel=0.01)


def test_histograms_merge_by_adding_counts() -> None:
    low, high = Histogram(), Histogram()
    for _ in range(99):
        low.record(0.001)
    high.record(0.5)
    merged = Histogram.from_json(low.to_json())
    merged.merge(Histogram.from_json(high.to_json()))
    assert merged.total == 100
    assert merged.percentile_ms(99) == pytest.approx(1.0, rel=0.01)
    assert merged.percentile_ms(100) == pytest.approx(500.0, rel=0.01)


def test_empty_histogram_has_no_percentiles() -> None:
    assert Histogram().summary()["p99_ms"] is None


# ---- the generator's lean WebSocket client, against the echo server in-process ----
@pytest.fixture
async def echo_url() -> AsyncIterator[str]:
    runner = web.AppRunner(make_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"ws://127.0.0.1:{port}/ws"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("size", [0, 35, 125, 126, 65535])
async def test_wire_client_round_trips_frames_of_every_length_encoding(
    echo_url: str, size: int
) -> None:
    client = await connect(echo_url, "tripeaks.v1.msgpack")
    got: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    client.on_message = got.set_result
    payload = bytes(i % 251 for i in range(size))
    client.send(payload)
    assert await asyncio.wait_for(got, 10) == payload
    client.close()


async def test_wire_client_refuses_a_server_that_ignores_its_subprotocol(echo_url: str) -> None:
    with pytest.raises(WireError, match="subprotocol"):
        await connect(echo_url, "not.a.protocol")


async def test_wire_client_refuses_a_plain_http_answer(echo_url: str) -> None:
    with pytest.raises(WireError, match="answered"):
        await connect(echo_url.replace("/ws", "/healthz"), "tripeaks.v1.msgpack")


async def test_wire_client_reports_a_closed_connection(echo_url: str) -> None:
    client = await connect(echo_url, "tripeaks.v1.msgpack")
    closed = asyncio.Event()
    client.on_close = closed.set
    client.close()
    await asyncio.wait_for(closed.wait(), 10)
    assert client.closed


def test_masked_client_frames_unmask_to_the_payload() -> None:
    payload = b"tripeaks move frame"
    data = frame(0x2, payload)
    assert data[0] == 0x82 and data[1] == 0x80 | len(payload)
    key, masked = data[2:6], data[6:]
    assert bytes(b ^ key[i % 4] for i, b in enumerate(masked)) == payload


async def test_wire_client_parses_long_server_frames_split_across_reads() -> None:
    client = WireClient("127.0.0.1", 1, "/ws", "tripeaks.v1.msgpack")
    client._handshaken = True
    got: list[bytes] = []
    client.on_message = got.append
    payload = bytes(i % 253 for i in range(70_000))
    data = bytes([0x82, 127]) + len(payload).to_bytes(8, "big") + payload
    data += bytes([0x82, 3]) + b"abc"
    for cut in (1, 5, 9000, len(data)):
        client.data_received(data[:cut])
        data = data[cut:]
    assert got == [payload, b"abc"]


def test_the_generators_move_frames_are_the_codecs_bytes() -> None:
    for seq, action, position in [
        (1, m.MoveAction.PLAY, 0), (127, m.MoveAction.PLAY, 27), (128, m.MoveAction.DRAW, None),
        (70_000, m.MoveAction.UNDO, None), (m.MAX_SEQ, m.MoveAction.PLAY, 255),
    ]:
        expected = codec.encode_msgpack(m.MoveRequest(seq, action, position))
        assert move_frame(seq, action, position) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy(tuple(m.SERVER_MESSAGES.values())))
def test_the_generator_reads_the_tag_of_every_server_frame_from_its_bytes(message: object) -> None:
    """The generator skips unpacking frames by the tag it peeks: it must be the frame's."""
    assert peek_tag(codec.encode_msgpack(message)) == message.TAG  # type: ignore[attr-defined]


def test_the_generator_peeks_the_fast_encoders_tags_and_nothing_of_other_maps() -> None:
    row = ("p1", 3, 20, 5, 0, m.PlayerStatus.RACING, 900, True)
    progress = progress_msgpack(900, (row,))
    assert peek_tag(progress) == "progress"
    assert peek_tag(update_msgpack(progress, ())) == "spectator_update"
    assert peek_tag(update_msgpack(None, ())) == "spectator_update"
    # Not a map led by "t": left to the full decoder.
    for other in (b"", b"\x81", b"\x81\xa1x\xa1y", b"\x91\xa1t", b"\x81\xa1t\x01",
                  b"\x81\xa1t\xa5prog", b"\xde\x00", b"\xde\x00\x10\xa1t"):
        assert peek_tag(other) is None


def _histogram(text: str, name: str, bound: str) -> tuple[int, int]:
    """Observations of histogram ``name`` and those above ``bound``, read by
    prometheus_client's own parser."""
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == name]
    count = next(s.value for s in family.samples if s.name.endswith("_count"))
    within = next(s.value for s in family.samples
                  if s.name.endswith("_bucket") and s.labels["le"] == bound)
    return int(count), int(count - within)


async def test_log_figures_reads_the_servers_commit_and_fold_histograms(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await ann.request(move_request(1, "draw"), m.MoveResult)
        await asyncio.sleep(0.6)  # the progress flush (a logged timer) has come and gone
        url = f"{server.url}/metrics"
        total, slow, _steps, _slow_steps = await asyncio.to_thread(log_figures, url)
        journal = server.hub.journal
        assert journal is not None and 1 <= total == journal.commits
        async with aiohttp.ClientSession() as http:
            for _ in range(250):  # a fold comes a second after the log began
                async with http.get(url) as response:
                    text = await response.text()
                if parse_log_figures(text)[2]:
                    break
                await asyncio.sleep(0.02)
    assert (total, slow) == _histogram(text, "tripeaks_log_commit_seconds", "0.05")
    folds = _histogram(text, "tripeaks_log_fold_step_seconds", "0.01")
    assert folds[0] >= 1
    assert parse_log_figures(text) == (total, slow, *folds)


def test_a_metrics_page_that_does_not_answer_leaves_the_log_figures_out_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server swamped at a window's start may not answer its /metrics in time: the
    window goes on without its log figures (a timeout once ended the whole run)."""
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        assert scraped_log_figures(f"http://127.0.0.1:{port}/metrics", timeout_s=0.2) is None
    assert "did not answer" in capsys.readouterr().err
    # Nothing listening at all: refused, and the same.
    assert scraped_log_figures(f"http://127.0.0.1:{port}/metrics", timeout_s=0.2) is None
    assert "left out" in capsys.readouterr().err


@pytest.mark.parametrize(("during_ms", "ok"), [(20.0, True), (20.001, False)])
def test_the_burst_ratio_is_judged_before_it_is_rounded(during_ms: float, ok: bool) -> None:
    hists = {"rtt_before_burst": Histogram(), "rtt_during_burst": Histogram()}
    hists["rtt_before_burst"].record(0.010)
    hists["rtt_during_burst"].record(during_ms / 1000)
    figures = burst_figures(WindowResult(hists=hists), 50)
    assert figures["burst_ratio_ok"] is ok
    assert figures["burst_rtt_ratio"] == pytest.approx(during_ms / 10, abs=0.001)


def test_players_within_an_open_file_limit_fit_both_ends_of_every_socket() -> None:
    """Rooms of 4 players and a spectator: five sockets a room, after the files each
    process holds besides them; whole rooms only."""
    assert players_within(20_000) == (20_000 - FILES_BESIDES_SOCKETS) // 5 * 4 == 15_792
    assert players_within(20_000, spectators_per_room=0) == 19_744 // 4 * 4
    assert players_within(FILES_BESIDES_SOCKETS + 4) == 0
    assert players_within(0) == 0
    assert players_within(FILES_BESIDES_SOCKETS + 5) == 4


def test_a_capacity_step_beyond_the_open_file_limit_is_not_measured_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A step whose sockets would not fit is refused before any server starts (on this
    machine 16,000 players and their spectators need 20,000 sockets, as many as each
    process may open): the step says so, and counts neither as held nor as missed."""
    bench = Bench(QUICK, tmp_path)
    bench.open_files = 20_000
    steps: list[dict[str, object]] = []
    assert bench._capacity_step(16_000, steps) is None
    (step,) = steps
    assert step["players"] == 16_000 and step["ok"] is None and step["p99_ms"] is None
    assert "20000 sockets" in str(step["not_measured"])
    assert "20000 files" in str(step["not_measured"])
    assert "16000 players NOT MEASURED" in capsys.readouterr().err
