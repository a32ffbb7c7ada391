"""The C twin of ``protocol/deals/groups.py`` gives the definition's results.

``groups.py`` is the definition; the native build compiles ``groups.c`` in its place
(tools/native.py).  Here both run side by side on the same inputs: the Python file loaded
under another name, the compiled module as the solver imports it.  Every result is
compared with its order (the layered search's line depends on the order of its dicts), and
the dicts the functions update are compared after the call.  Then the whole solver, run
compiled here and as pure Python in a child process, gives the same verdicts, pars, lines
and state counts.

``make test`` builds first, so the twin is there; without a build these tests are
skipped, as are the native build's own (tests/tools/test_native.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol.deals.groups as loaded
from protocol.deals.depth_first import EMPTY, Board
from protocol.deals.layered import _group_moves, _playable
from protocol.deals.shuffle import candidate_deal
from protocol.native import ROOT, source_path
from protocol.rules.game import Rules
from tests.protocol.deals.test_layered_groups import reachable_masks, to_groups


def _definition() -> ModuleType:
    """``groups.py`` itself, whatever the build (a module of its own name)."""
    spec = importlib.util.spec_from_file_location(
        "groups_definition", source_path("protocol.deals.groups")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


python = _definition()
compiled = loaded
pytestmark = pytest.mark.skipif(
    not (loaded.__file__ or "").endswith(".so"), reason="no compiled twin (make native)"
)

seeds = st.text("abcdef0123", min_size=1, max_size=6)
rules_st = st.sampled_from(
    [Rules(wrap=w, empty_waste=e) for w in (True, False) for e in (False, True)]
)
#: Sets of bottom-row masks of every shape: single bits at the digits' seams (CPython's
#: digits are 30 bits), the highest bit, and dense random ones.
bitsets = st.one_of(
    st.integers(1, (1 << 1024) - 1),
    st.sets(st.sampled_from([0, 1, 29, 30, 31, 59, 60, 61, 63, 64, 511, 512, 1019, 1020, 1023]),
            min_size=1).map(lambda bits: sum(1 << b for b in bits)),
    st.integers(1, (1 << 64) - 1),
)
groups_st = st.dictionaries(st.integers(0, (1 << 18) - 1), bitsets, max_size=25)


def _items(groups: dict[int, Any]) -> list[tuple[int, Any]]:
    return list(groups.items())


def _tests(board: Board, limit: int) -> tuple[Any, Any]:
    counting = board.counting(limit)
    most, least = counting.bottom_range
    args = (counting.weights, most, least, counting.biases, counting.credit)
    return python.GroupTest(*args), compiled.GroupTest(*args)


def _keep_agrees(board: Board, limit: int, groups: dict[int, Any], drawn: int, top: int,
                 seen: dict[int, Any] | None, playable: Any) -> None:
    """The twin's ``GroupTest.keep`` keeps what the definition's keeps, in its order."""
    ours, theirs = _tests(board, limit)
    expected = ours.keep(groups, drawn, top, seen, playable)
    assert _items(theirs.keep(groups, drawn, top, seen, playable)) == _items(expected)


def test_the_definition_and_the_twin_are_two_modules() -> None:
    assert (python.__file__ or "").endswith("groups.py")
    assert (compiled.__file__ or "").endswith(".so")
    assert python.GroupTest is not compiled.GroupTest


@settings(max_examples=120, deadline=None)
@given(seed=seeds, rules=rules_st, data=st.data())
def test_keep_leaves_out_the_same_masks_in_the_same_order(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    board = Board(candidate_deal(seed, 0, rules))
    limit = data.draw(st.integers(0, len(board.stock_ranks)))
    groups = to_groups(data.draw(reachable_masks(board)))
    seen = to_groups(data.draw(reachable_masks(board))) if data.draw(st.booleans()) else None
    drawn = data.draw(st.integers(0, limit))
    top = data.draw(st.integers(0, EMPTY))
    playable = _playable(_group_moves(board)[top]) if data.draw(st.booleans()) else None
    _keep_agrees(board, limit, groups, drawn, top, seen, playable)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, rules=rules_st, data=st.data())
def test_keep_of_any_bottom_row_sets(seed: str, rules: Rules, data: st.DataObject) -> None:
    board = Board(candidate_deal(seed, 0, rules))
    limit = len(board.stock_ranks)
    groups, seen = data.draw(groups_st), data.draw(groups_st)
    drawn = data.draw(st.integers(0, limit))
    top = data.draw(st.integers(0, EMPTY))
    for playable in (None, _playable(_group_moves(board)[top])):
        _keep_agrees(board, limit, groups, drawn, top, seen, playable)


@settings(max_examples=80, deadline=None)
@given(seed=seeds, rules=rules_st, data=st.data())
def test_grow_moves_the_same_groups(seed: str, rules: Rules, data: st.DataObject) -> None:
    board = Board(candidate_deal(seed, 0, rules))
    fit = _group_moves(board)
    tops = data.draw(st.lists(st.integers(0, EMPTY), min_size=1, max_size=3, unique=True))
    front = {top: to_groups(data.draw(reachable_masks(board))) for top in tops}
    expected = python.grow(front, fit)
    got = compiled.grow(front, fit)
    assert list(got) == list(expected)
    assert all(_items(got[rank]) == _items(expected[rank]) for rank in expected)


@settings(max_examples=150, deadline=None)
@given(seen=groups_st, groups=groups_st, zero_keys=st.sets(st.integers(0, 40)))
def test_take_new_returns_and_records_the_same(
    seen: dict[int, int], groups: dict[int, int], zero_keys: set[int]
) -> None:
    seen = {**seen, **{key: 0 for key in zero_keys}}  # an empty set counts as unseen
    ours, theirs = dict(seen), dict(seen)
    new, count = python.take_new(ours, groups)
    got, got_count = compiled.take_new(theirs, groups)
    assert (_items(got), got_count) == (_items(new), count)
    assert _items(theirs) == _items(ours)


@settings(max_examples=150, deadline=None)
@given(met=groups_st, pieces=st.lists(groups_st, max_size=4))
def test_met_first_and_merge_return_and_record_the_same(
    met: dict[int, int], pieces: list[dict[int, int]]
) -> None:
    ours, theirs = dict(met), dict(met)
    layer = [(rank, groups) for rank, groups in enumerate(pieces)]
    assert _items(compiled.met_first(theirs, layer)) == _items(python.met_first(ours, layer))
    assert _items(theirs) == _items(ours)
    for groups in pieces:
        python.merge(ours, groups)
        compiled.merge(theirs, groups)
    assert _items(theirs) == _items(ours)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (1 << 1024, OverflowError, "at most 1,024 bits"),
        ((1 << 1050) - 1, OverflowError, "at most 1,024 bits"),
        (-1, OverflowError, "cannot be negative"),
        ("bits", TypeError, "must be an int, not str"),
    ],
)
def test_a_set_it_cannot_hold_is_refused_clearly(
    value: object, error: type[Exception], message: str
) -> None:
    seen: dict[int, object] = {3: 1}
    with pytest.raises(error, match=message):
        compiled.take_new(seen, {3: value})
    with pytest.raises(error, match=message):
        compiled.merge({}, {1: 1, 2: value})
    board = Board(candidate_deal("refused", 0, Rules()))
    _, theirs = _tests(board, len(board.stock_ranks))
    with pytest.raises(error, match=message):
        theirs.keep({5: value}, 0, 0, None, None)
    assert seen == {3: 1}  # nothing recorded for the refused set


def test_out_of_range_arguments_are_refused_clearly() -> None:
    board = Board(candidate_deal("refused", 0, Rules()))
    limit = len(board.stock_ranks)
    _, theirs = _tests(board, limit)
    with pytest.raises(IndexError, match=f"drawn {limit + 1} out of range"):
        theirs.keep({}, limit + 1, 0, None, None)
    with pytest.raises(IndexError, match="top 14 out of range"):
        theirs.keep({}, 0, EMPTY + 1, None, None)
    with pytest.raises(ValueError, match="upper-row mask 262144 out of range"):
        theirs.keep({1 << 18: 1}, 0, 0, None, None)
    with pytest.raises(ValueError, match="28 weights expected, got 3"):
        compiled.GroupTest((1, 2, 3), 0, 0, [], ())
    with pytest.raises(TypeError, match="grow"):
        compiled.grow({}, [])


_SOLVE_ALL = """
import json, sys
import protocol.deals.groups as groups
from protocol.deals.shuffle import candidate_deal
from protocol.deals.solver import solve, wins_within
from protocol.rules.game import Rules
out = []
for wrap in (True, False):
    for empty in (False, True):
        for i in range(int(sys.argv[1])):
            deal = candidate_deal(f"twin-{i}", 0, Rules(wrap=wrap, empty_waste=empty))
            r = solve(deal, want_par=i % 3 == 0)
            line = wins_within(deal, i % 12)
            out.append([r.winnable, r.par, r.solution, r.nodes, line])
print(json.dumps({"groups": groups.__file__, "results": out}))
"""


def _solve_all(deals: int, **env: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", _SOLVE_ALL, str(deals)], cwd=ROOT,
        env={**os.environ, **env}, capture_output=True, text=True, timeout=300, check=True,
    )
    return json.loads(done.stdout)


def test_the_solver_decides_the_same_compiled_and_pure() -> None:
    twin, pure = _solve_all(40), _solve_all(40, TRIPEAKS_PURE="1")
    assert twin["groups"].endswith(".so") and pure["groups"].endswith("groups.py")
    assert twin["results"] == pure["results"]
    assert any(result[3] > 5000 for result in twin["results"])  # layered searches ran
