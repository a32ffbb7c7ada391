"""``tripeaks deal``, ``solve`` and ``stats`` as a user runs them."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from client_cli.__main__ import main
from client_cli.deal_commands import wilson_interval
from protocol.rules.game import Deal, Rules, Status, replay

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden_deals.jsonl"


def _golden(winnable: bool, rules: dict[str, bool]) -> dict[str, Any]:
    for line in GOLDEN.read_text().splitlines():
        record = json.loads(line)
        if record["winnable"] is winnable and record["rules"] == rules:
            return record
    raise LookupError


def _deal_object(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ("rules", "peaks", "waste", "stock")}


def _solve(
    stdin: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, list[Any], str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main(["solve", *args])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_deal_json_prints_one_object_with_the_documented_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["deal", "42", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    obj = json.loads(out)
    assert list(obj) == ["seed", "rules", "candidate", "peaks", "waste", "stock", "solution", "par"]
    assert obj["seed"] == "42" and obj["rules"] == {"wrap": True, "empty_waste": False}
    deal = Deal.from_codes(Rules(), obj["peaks"], obj["waste"], obj["stock"])
    game = replay(deal, obj["solution"])
    assert game.status is Status.WON and game.draws == obj["par"]
    assert all(m == "draw" or isinstance(m, int) for m in obj["solution"])


def test_deal_options_reach_the_dealer(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["deal", "opts", "--no-wrap", "--empty-waste", "--difficulty", "hard", "--json"]) == 0
    )
    obj = json.loads(capsys.readouterr().out)
    assert obj["rules"] == {"wrap": False, "empty_waste": True}
    assert obj["waste"] is None and len(obj["stock"]) == 24
    assert obj["par"] >= 16


def test_deal_without_json_draws_the_three_peaks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deal", "42"]) == 0
    page = capsys.readouterr().out
    main(["deal", "42", "--json"])
    obj = json.loads(capsys.readouterr().out)
    lines = page.splitlines()
    rows = [line.split() for line in lines[2:6]]
    assert rows == [obj["peaks"][0:3], obj["peaks"][3:9], obj["peaks"][9:18], obj["peaks"][18:28]]
    # each card sits between the two cards that cover it
    assert lines[2].index(obj["peaks"][0]) == lines[3].index(obj["peaks"][3]) + 2
    assert lines[4].index(obj["peaks"][9]) == lines[5].index(obj["peaks"][18]) + 2
    assert f"Waste: {obj['waste']}" in page
    assert " ".join(obj["stock"]) in page
    assert f"par {obj['par']}" in page


def test_deal_refuses_a_bad_seed_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deal", "x" * 65]) == 2
    assert "at most 64 characters" in capsys.readouterr().err


def test_solve_decides_one_deal_object(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _golden(True, {"wrap": True, "empty_waste": False})
    status, out, _ = _solve(json.dumps(_deal_object(record), indent=2), capsys, monkeypatch)
    assert status == 0 and len(out) == 1
    assert list(out[0]) == ["winnable", "solution", "par", "nodes"]
    assert out[0]["winnable"] is True and out[0]["par"] is None and out[0]["nodes"] > 0
    deal = Deal.from_codes(Rules(), record["peaks"], record["waste"], record["stock"])
    assert replay(deal, out[0]["solution"]).status is Status.WON


def test_solve_reads_json_lines_and_answers_each_in_order_with_par(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [
        _golden(False, {"wrap": False, "empty_waste": False}),
        _golden(True, {"wrap": True, "empty_waste": True}),
        _golden(True, {"wrap": False, "empty_waste": True}),
    ]
    stdin = "\n".join(json.dumps(_deal_object(r)) for r in records) + "\n"
    status, out, _ = _solve(stdin, capsys, monkeypatch, "--par")
    assert status == 0
    assert [o["winnable"] for o in out] == [r["winnable"] for r in records]
    assert [o["par"] for o in out] == [r["par"] for r in records]
    assert out[0]["solution"] is None


def test_solve_takes_the_output_of_deal_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["deal", "pipe", "--json"])
    dealt = capsys.readouterr().out
    status, out, _ = _solve(dealt, capsys, monkeypatch, "--par")
    assert status == 0 and out[0]["winnable"] and out[0]["par"] == json.loads(dealt)["par"]


def _broken(change: str) -> str:
    obj = _deal_object(_golden(True, {"wrap": True, "empty_waste": False}))
    if change == "short":
        obj["peaks"] = obj["peaks"][:27]
    elif change == "duplicate":
        obj["stock"][0] = obj["peaks"][0]
    elif change == "unknown":
        obj["stock"][0] = "1X"
    elif change == "short stock":
        obj["stock"] = obj["stock"][:-1]
    elif change == "missing waste":
        obj["waste"] = None
    elif change == "bad rules":
        obj["rules"] = {"wrap": "yes"}
    return json.dumps(obj)


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (_broken("short"), "peaks must hold 28 cards, got 27"),
        (_broken("duplicate"), "duplicate cards in deal"),
        (_broken("unknown"), "not a card code: '1X'"),
        (_broken("short stock"), "needs 23 stock cards, got 22"),
        (_broken("missing waste"), "need one waste card"),
        (_broken("bad rules"), "rules.wrap must be true or false"),
        ('{"peaks": ', "not valid JSON"),
        ("[1, 2, 3]", "a deal is a JSON object"),
        ('{"waste": null}', "peaks must be a list of card codes"),
    ],
    ids=[
        "wrong-count",
        "duplicate",
        "unknown-card",
        "stock-count",
        "no-waste",
        "rules",
        "bad-json",
        "not-an-object",
        "no-peaks",
    ],
)
def test_solve_rejects_a_malformed_deal_with_a_clear_message(
    stdin: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    status, out, err = _solve(stdin, capsys, monkeypatch)
    assert status == 1
    assert message in err
    assert len(out) == 1 and message in out[0]["error"]


def test_one_bad_line_does_not_lose_the_other_deals(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = json.dumps(_deal_object(_golden(True, {"wrap": True, "empty_waste": False})))
    status, out, err = _solve(
        f"{good}\nnot json\n{_broken('duplicate')}\n{good}\n", capsys, monkeypatch
    )
    assert status == 1
    assert [("error" in o) for o in out] == [False, True, True, False]
    assert "line 2: not valid JSON" in err and "line 3: duplicate cards" in err


def test_solve_with_nothing_on_stdin_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = _solve("  \n", capsys, monkeypatch)
    assert status == 1 and out == [] and "no deal on stdin" in err


def test_stats_prints_the_winnable_share_with_a_wilson_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["stats", "--deals", "12", "--seed", "cli", "--jobs", "1", "--json"]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out)
    assert figures["deals"] == 12 and 0 <= figures["winnable"] <= 12
    low, high = figures["interval95"]
    assert low <= figures["share"] <= high
    assert "12/12" in captured.err  # the progress bar, on stderr


def test_stats_gives_the_same_answer_with_two_worker_processes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["stats", "--deals", "6", "--seed", "pool", "--jobs", "1", "--no-wrap", "--json"])
    alone = json.loads(capsys.readouterr().out)
    main(["stats", "--deals", "6", "--seed", "pool", "--jobs", "2", "--no-wrap", "--json"])
    pooled = json.loads(capsys.readouterr().out)
    assert alone == pooled


def test_stats_text_output_names_the_interval(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--deals", "3", "--seed", "text", "--jobs", "1"]) == 0
    assert "95% interval" in capsys.readouterr().out


def test_stats_refuses_a_deal_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["stats", "--deals", "0"])
    assert exit_info.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_wilson_interval_matches_known_values() -> None:
    low, high = wilson_interval(969, 1000)
    # worked by hand: centre 0.96721, half-width 0.01087
    assert round(low, 4) == 0.9563 and round(high, 4) == 0.9781
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_the_installed_tripeaks_script_runs_solve_end_to_end() -> None:
    record = _golden(False, {"wrap": True, "empty_waste": True})
    done = subprocess.run(
        [sys.executable, "-m", "client_cli", "solve"],
        input=json.dumps(_deal_object(record)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["winnable"] is False


def test_a_reader_that_stops_early_is_not_an_error() -> None:
    # like `tripeaks deal 42 | head -1`: the pipe closes before the deal is printed
    proc = subprocess.Popen(
        [sys.executable, "-m", "client_cli", "deal", "42"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err
