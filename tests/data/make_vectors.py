"""Regenerate ``deal_vectors.json`` and ``commitment_vectors.json``.

The deal vectors are printed in docs/deals.md, the commitment vectors (the
cases of ``tools.docgen.COMMITMENT_VECTORS``) in docs/protocol.md.  Run
``python tests/data/make_vectors.py`` from the repository root.  The vectors
pin the whole seed-to-deal path and the commitment; they must never change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from protocol.deals.commitment import commitment, commitment_text
from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.deals.shuffle import DOMAIN, shuffled_deck
from protocol.rules.cards import card_code
from protocol.rules.game import Rules
from tools.docgen import COMMITMENT_VECTORS

CASES = (
    ("42", Rules(wrap=True, empty_waste=False), Difficulty.ANY),
    ("golden-2", Rules(wrap=True, empty_waste=False), Difficulty.ANY),
    ("18446744073709551615", Rules(wrap=False, empty_waste=False), Difficulty.ANY),
    ("Über Straße ♠", Rules(wrap=True, empty_waste=True), Difficulty.ANY),
    ("friday-race", Rules(wrap=False, empty_waste=True), Difficulty.ANY),
    ("levels", Rules(wrap=True, empty_waste=False), Difficulty.HARD),
    ("levels", Rules(wrap=True, empty_waste=False), Difficulty.EASY),
)


def first_block(seed: str) -> str:
    """SHA-256 block 0 of candidate 0, in hex (a debugging aid for ports)."""
    data = DOMAIN + seed.encode() + b"\x00" + (0).to_bytes(8, "big") + (0).to_bytes(8, "big")
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    vectors = []
    for seed, rules, difficulty in CASES:
        dealt = deal_for_seed(seed, rules, difficulty)
        vectors.append(
            {
                "seed": seed,
                "rules": {"wrap": rules.wrap, "empty_waste": rules.empty_waste},
                "difficulty": difficulty.value,
                "first_block_candidate_0": first_block(seed),
                "deck_candidate_0": [card_code(c) for c in shuffled_deck(seed, 0)],
                "candidate": dealt.candidate,
                **dealt.deal.codes(),
                "par": dealt.par,
            }
        )
    path = Path(__file__).with_name("deal_vectors.json")
    path.write_text(json.dumps(vectors, indent=1, ensure_ascii=False) + "\n")
    commitments = [
        {
            "seed": seed,
            "rules": {"wrap": rules.wrap, "empty_waste": rules.empty_waste},
            "text": commitment_text(seed, rules),
            "commitment": commitment(seed, rules),
        }
        for seed, rules in COMMITMENT_VECTORS
    ]
    path = Path(__file__).with_name("commitment_vectors.json")
    path.write_text(json.dumps(commitments, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
