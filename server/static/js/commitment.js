// Checks done in the browser at race over, with SubtleCrypto's SHA-256:
// the seed commitment (protocol/deals/commitment.py) and the deal itself, rebuilt
// from the revealed seed and candidate number (protocol/deals/shuffle.py,
// docs/deals.md). Both must match the Python code byte for byte.

const COMMITMENT_DOMAIN = "tripeaks-commit-v1";
const DEAL_DOMAIN = "TriPeaks deal v1\u0000";
const RANKS = "A23456789TJQK";
const SUITS = "CDHS";
const TWO_64 = 1n << 64n;

/** The exact text that is hashed for a commitment. */
export function commitmentText(seed, rules) {
  return `${COMMITMENT_DOMAIN}\nseed=${seed}\nwrap=${rules.wrap ? 1 : 0}` +
    `\nempty_waste=${rules.empty_waste ? 1 : 0}`;
}

function subtle() {
  if (!globalThis.crypto || !globalThis.crypto.subtle) {
    throw new Error("this browser offers SHA-256 only on secure pages (https or localhost)");
  }
  return globalThis.crypto.subtle;
}

async function sha256(bytes) {
  return new Uint8Array(await subtle().digest("SHA-256", bytes));
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase hex SHA-256 commitment of a seed under {wrap, empty_waste}. */
export async function commitment(seed, rules) {
  return hex(await sha256(new TextEncoder().encode(commitmentText(seed, rules))));
}

function u64be(value) {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(value));
  return bytes;
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}

/** The 52 cards (codes) of the shuffle for seed and candidate. */
export async function shuffledDeck(seed, candidate) {
  const enc = new TextEncoder();
  const prefix = concat(enc.encode(DEAL_DOMAIN), enc.encode(seed), new Uint8Array([0]),
    u64be(candidate));
  let counter = 0;
  let words = [];
  const nextWord = async () => {
    if (!words.length) {
      const block = await sha256(concat(prefix, u64be(counter)));
      counter += 1;
      const view = new DataView(block.buffer);
      words = [0, 8, 16, 24].map((i) => view.getBigUint64(i));
    }
    return words.shift();
  };
  const below = async (n) => {
    const big = BigInt(n);
    const limit = TWO_64 - (TWO_64 % big);
    for (;;) {
      const word = await nextWord();
      if (word < limit) return Number(word % big);
    }
  };
  const deck = Array.from({ length: 52 }, (_, i) => RANKS[i % 13] + SUITS[Math.floor(i / 13)]);
  for (let i = 51; i > 0; i -= 1) {
    const j = await below(i + 1);
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

/** True when {peaks, waste, stock} is the deal of seed and candidate under the rules. */
export async function dealMatches(seed, candidate, rules, deal) {
  const deck = await shuffledDeck(seed, candidate);
  const peaks = deck.slice(0, 28);
  const waste = rules.empty_waste ? null : deck[28];
  const stock = deck.slice(rules.empty_waste ? 28 : 29);
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  return same(peaks, deal.peaks) && (deal.waste ?? null) === waste && same(stock, deal.stock);
}

/**
 * Check a revealed seed against the commitment sent at race start and show
 * the verdict in `node` ("✔ …" or "✘ …"). Resolves to true, false, or null
 * when the check could not run.
 */
export async function checkCommitment(node, seed, rules, expected) {
  try {
    const actual = await commitment(seed, rules);
    const ok = actual === String(expected).toLowerCase();
    node.dataset.ok = String(ok);
    node.textContent = ok
      ? "✔ the revealed seed matches the commitment sent at the start"
      : `✘ the revealed seed does not match the commitment (it hashes to ${actual})`;
    return ok;
  } catch (error) {
    node.dataset.ok = "unknown";
    node.textContent = `cannot check: ${error.message}`;
    return null;
  }
}

/** Rebuild the deal from the seed and show the verdict in `node`. */
export async function checkDeal(node, seed, candidate, rules, deal) {
  try {
    const ok = await dealMatches(seed, candidate, rules, deal);
    node.dataset.ok = String(ok);
    node.textContent = ok
      ? `✔ the deal is candidate ${candidate} of this seed`
      : "✘ the deal is not the one this seed gives";
    return ok;
  } catch (error) {
    node.dataset.ok = "unknown";
    node.textContent = `cannot check: ${error.message}`;
    return null;
  }
}
