// The standing order of docs/rules.md ("Ranking in a race"), shared by the
// watch page's panels and the play page's live standings, as the terminal
// client lists opponents: finishers first by rank, then everyone else by cards
// cleared, who reached that count first on the race clock, then fewer moves.
// Ties keep the order the items came in.

/**
 * `items` sorted by standing; `keyOf(item)` gives
 * `{ finished, rank, cleared, reachedAtMs, moves }` (`rank` null until known).
 */
export function sortByStanding(items, keyOf) {
  const keyed = items.map((item, index) => ({ item, index, key: standingKey(keyOf(item)) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < 4; i += 1) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
    return a.index - b.index;
  });
  return keyed.map((entry) => entry.item);
}

function standingKey({ finished, rank, cleared, reachedAtMs, moves }) {
  return finished && rank !== null && rank !== undefined
    ? [0, rank, 0, 0]
    : [1, -cleared, reachedAtMs, moves];
}
