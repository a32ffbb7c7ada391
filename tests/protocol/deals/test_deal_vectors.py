"""Deal test vectors: seed and rule options give exactly the documented deal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.deals.shuffle import DOMAIN, SeedStream, shuffled_deck
from protocol.rules.cards import card_code
from protocol.rules.game import Rules

ROOT = Path(__file__).resolve().parents[3]
VECTORS: list[dict[str, Any]] = json.loads(
    (ROOT / "tests" / "data" / "deal_vectors.json").read_text(encoding="utf-8")
)


def _id(vector: dict[str, Any]) -> str:
    return f"{vector['seed']}-{vector['rules']}-{vector['difficulty']}"


def test_there_are_at_least_five_vectors_covering_every_rule_set() -> None:
    assert len(VECTORS) >= 5
    kinds = {(v["rules"]["wrap"], v["rules"]["empty_waste"]) for v in VECTORS}
    assert len(kinds) == 4
    assert any(v["candidate"] > 0 for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=_id)
def test_the_shuffle_of_candidate_zero_matches_the_vector(vector: dict[str, Any]) -> None:
    deck = [card_code(c) for c in shuffled_deck(vector["seed"], 0)]
    assert deck == vector["deck_candidate_0"]


@pytest.mark.parametrize("vector", VECTORS, ids=_id)
def test_the_first_hash_block_matches_the_vector(vector: dict[str, Any]) -> None:
    stream = SeedStream(vector["seed"], 0)
    words = [stream.next_word() for _ in range(4)]
    block = b"".join(word.to_bytes(8, "big") for word in words)
    assert block.hex() == vector["first_block_candidate_0"]
    assert DOMAIN == b"TriPeaks deal v1\x00"


@pytest.mark.parametrize("vector", VECTORS, ids=_id)
def test_the_dealer_picks_the_vector_candidate_and_deal(vector: dict[str, Any]) -> None:
    rules = Rules(**vector["rules"])
    dealt = deal_for_seed(vector["seed"], rules, Difficulty(vector["difficulty"]))
    assert dealt.candidate == vector["candidate"]
    assert dealt.deal.codes() == {
        "peaks": vector["peaks"],
        "waste": vector["waste"],
        "stock": vector["stock"],
    }
    assert dealt.par == vector["par"]


@pytest.mark.parametrize("vector", VECTORS, ids=_id)
def test_docs_deals_prints_every_vector(vector: dict[str, Any]) -> None:
    page = (ROOT / "docs" / "deals.md").read_text(encoding="utf-8")
    assert " ".join(vector["peaks"]) in page
    assert " ".join(vector["stock"]) in page
    assert " ".join(vector["deck_candidate_0"]) in page
