// /leaderboard: claimed players by rating, from GET /api/leaderboard.

import { el, setChildren, showMessage } from "./dom.js";

const $ = (id) => document.getElementById(id);

/** A link to a player's profile. */
export function playerLink(account, name) {
  return el("a", { href: `/players/${encodeURIComponent(account)}`, text: name });
}

async function main() {
  const query = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const key of ["min_races", "limit"]) if (query.has(key)) params.set(key, query.get(key));
  let body;
  try {
    const response = await fetch(`/api/leaderboard?${params}`);
    body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  } catch (error) {
    showMessage($("message"), `The leaderboard could not be loaded: ${error.message}`, "error");
    return;
  }
  const races = body.min_races === 1 ? "1 rated race" : `${body.min_races} rated races`;
  $("rule").textContent = `Claimed players with at least ${races}, by rating.`;
  if (!body.players.length) {
    showMessage($("message"), "Nobody is on the leaderboard yet.", "info");
    return;
  }
  setChildren($("board").querySelector("tbody"), body.players.map((p) => el("tr", {}, [
    el("td", { text: p.rank }),
    el("td", {}, [playerLink(p.account, p.name)]),
    el("td", { text: p.rating }),
    el("td", { text: p.rated_races }),
  ])));
  $("board").hidden = false;
}

main();
