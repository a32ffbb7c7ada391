"""The seed commitment: its exact text, its hash, and verifying seeds and deals."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.deals.commitment import commitment, commitment_text, verify_commitment, verify_deal
from protocol.deals.shuffle import SeedError, candidate_deal
from protocol.rules.game import Deal, Rules
from tools import docgen

ROOT = Path(__file__).resolve().parents[3]
VECTORS: list[dict[str, Any]] = json.loads(
    (ROOT / "tests" / "data" / "commitment_vectors.json").read_text(encoding="utf-8")
)
ALL_RULES = [Rules(w, e) for w in (True, False) for e in (True, False)]
SEEDS = st.text(
    st.characters(categories=["L", "M", "N", "P", "S"]) | st.just(" "), min_size=1, max_size=64
).filter(str.isprintable)


def test_the_commitment_text_is_four_lines_without_a_trailing_newline() -> None:
    text = commitment_text("abc", Rules(wrap=False, empty_waste=True))
    assert text == "tripeaks-commit-v1\nseed=abc\nwrap=0\nempty_waste=1"


def test_the_commitment_is_lowercase_hex_sha256_of_the_utf8_text() -> None:
    rules = Rules()
    expected = hashlib.sha256("tripeaks-commit-v1\nseed=Ünïcødé 🂡\nwrap=1\nempty_waste=0"
                              .encode()).hexdigest()
    assert commitment("Ünïcødé 🂡", rules) == expected
    assert len(expected) == 64 and expected == expected.lower()


def test_a_known_commitment_vector_stays_fixed() -> None:
    assert commitment("42", Rules()) == (
        "9120f6b39263d7d9325244d8f590ab3fc7c370314f6393d7a6dd93de8e0ac8bf"
    )


def _rules(vector: dict[str, Any]) -> Rules:
    return Rules(**vector["rules"])


def test_the_vectors_cover_every_rule_combination_and_a_non_ascii_seed() -> None:
    assert {_rules(v) for v in VECTORS} == set(ALL_RULES)
    assert any(not v["seed"].isascii() for v in VECTORS)
    assert [(v["seed"], _rules(v)) for v in VECTORS] == list(docgen.COMMITMENT_VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['seed']}-{v['rules']}")
def test_each_commitment_vector_stays_fixed(vector: dict[str, Any]) -> None:
    rules = _rules(vector)
    assert commitment_text(vector["seed"], rules) == vector["text"]
    assert commitment(vector["seed"], rules) == vector["commitment"]
    assert hashlib.sha256(vector["text"].encode("utf-8")).hexdigest() == vector["commitment"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['seed']}-{v['rules']}")
def test_docs_protocol_prints_every_commitment_vector(vector: dict[str, Any]) -> None:
    page = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    seed, rules = vector["seed"], _rules(vector)
    row = (
        f"| `{seed}` | `{seed.encode().hex()}` | {int(rules.wrap)} | {int(rules.empty_waste)} "
        f"| `{vector['commitment']}` |"
    )
    assert row in page


def test_every_rule_combination_commits_differently() -> None:
    digests = {commitment("same seed", rules) for rules in ALL_RULES}
    assert len(digests) == len(ALL_RULES)


@settings(max_examples=50, deadline=None)
@given(SEEDS, st.sampled_from(ALL_RULES))
def test_a_commitment_verifies_against_its_own_seed_and_rules(seed: str, rules: Rules) -> None:
    digest = commitment(seed, rules)
    assert verify_commitment(digest, seed, rules)
    assert verify_commitment(digest.upper(), seed, rules)
    assert not verify_commitment(digest, seed + "x" if len(seed) < 64 else seed[1:], rules)
    other = Rules(not rules.wrap, rules.empty_waste)
    assert not verify_commitment(digest, seed, other)


@pytest.mark.parametrize("digest", ["", "zz", "0" * 64, "é" * 64, "0" * 65])
def test_a_malformed_or_wrong_digest_does_not_verify(digest: str) -> None:
    assert not verify_commitment(digest, "42", Rules())


@pytest.mark.parametrize("seed", ["", "x" * 65, "a\nb", "tab\there"])
def test_an_invalid_seed_does_not_verify_and_cannot_be_committed(seed: str) -> None:
    digest = hashlib.sha256(b"anything").hexdigest()
    assert not verify_commitment(digest, seed, Rules())
    with pytest.raises(SeedError):
        commitment(seed, Rules())


@pytest.mark.parametrize("rules", ALL_RULES)
def test_a_deal_verifies_against_its_seed_and_candidate(rules: Rules) -> None:
    deal = candidate_deal("verify me", 3, rules)
    assert verify_deal(deal, "verify me", 3)
    assert not verify_deal(deal, "verify me", 2)
    assert not verify_deal(deal, "verify me!", 3)


def test_a_tampered_deal_does_not_verify() -> None:
    deal = candidate_deal("tamper", 0, Rules())
    peaks = list(deal.peaks)
    peaks[0], peaks[27] = peaks[27], peaks[0]
    tampered = Deal(deal.rules, tuple(peaks), deal.waste, deal.stock)
    assert not verify_deal(tampered, "tamper", 0)


def test_an_invalid_seed_or_candidate_does_not_verify_a_deal() -> None:
    deal = candidate_deal("x", 0, Rules())
    assert not verify_deal(deal, "", 0)
    assert not verify_deal(deal, "x", -1)
