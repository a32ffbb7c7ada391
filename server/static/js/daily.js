// /daily: today's commitment, and a day's leaderboards from GET /api/daily/DAY/leaderboard.
// Until a day is over nothing here can name its seed or its runs; once it is, the seed is
// checked against the commitment (as a race's is) and every run can be replayed or raced.

import { checkCommitment, checkDeal } from "./commitment.js";
import { el, formatMs, setChildren, showMessage } from "./dom.js";
import { raceThisRunHref } from "./ghostlink.js";

const $ = (id) => document.getElementById(id);

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error ?? `the server answered ${response.status}`);
  return body;
}

function row(entry, revealed) {
  const result = entry.finish_ms !== null ? `finished in ${formatMs(entry.finish_ms)}`
    : entry.status === "racing" ? "never finished" : entry.status;
  const runs = revealed && entry.race_id
    ? [el("a", { href: `/races/${encodeURIComponent(entry.race_id)}` }, "replay"), " · ",
      el("a", { href: raceThisRunHref(entry.race_id, entry.player_id) }, "race this run")]
    : [el("span", { class: "muted" }, "after the day")];
  return el("tr", {}, [
    el("td", {}, String(entry.rank)), el("th", { scope: "row" }, entry.name),
    el("td", {}, result), el("td", {}, `${entry.cleared}/28`), el("td", {}, String(entry.moves)),
    el("td", {}, runs),
  ]);
}

async function showBoard(day) {
  $("board-status").textContent = "Loading…";
  try {
    const board = await getJson(`/api/daily/${encodeURIComponent(day)}/leaderboard`);
    for (const key of ["humans", "bots"]) {
      setChildren($(key).tBodies[0], board[key].length ? board[key].map((e) => row(e, board.revealed))
        : [el("tr", {}, el("td", { colspan: "6", class: "muted" }, "nobody yet"))]);
    }
    const reveal = new Date(board.reveal_at_ms).toLocaleString();
    $("board-status").textContent = `${board.day}: ${board.revealed ? "over" : `open until ${reveal}`}`
      + ` · ${board.unranked} unranked guest attempt${board.unranked === 1 ? "" : "s"}`;
    $("revealed").hidden = !board.revealed;
    if (board.revealed) await showReveal(day);
  } catch (error) {
    $("board-status").textContent = `No leaderboard for ${day}: ${error.message}.`;
  }
}

async function showReveal(day) {
  const deal = await getJson(`/api/daily/${encodeURIComponent(day)}`);
  $("seed").textContent = deal.seed;
  $("candidate").textContent = String(deal.candidate);
  const rules = { wrap: deal.wrap, empty_waste: deal.empty_waste };
  await checkCommitment($("commit-check"), deal.seed, rules, deal.commitment);
  await checkDeal($("deal-check"), deal.seed, deal.candidate, rules, deal.deal);
}

async function main() {
  try {
    const today = await getJson("/api/daily");
    $("day").textContent = today.day;
    $("commitment").textContent = today.commitment;
    $("reveal").textContent = new Date(today.reveal_at_ms).toLocaleString();
    const asked = new URLSearchParams(location.search).get("day");
    $("board-day").value = asked ?? today.day;
    $("day-form").addEventListener("submit", (event) => {
      event.preventDefault();
      history.replaceState(null, "", `/daily?day=${encodeURIComponent($("board-day").value)}`);
      showBoard($("board-day").value);
    });
    await showBoard(asked ?? today.day);
  } catch (error) {
    showMessage($("message"), `Could not load the daily deal: ${error.message}.`, "error");
  }
}

main();
