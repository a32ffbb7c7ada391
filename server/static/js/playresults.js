// The results on the player's page: standings, par, the revealed seed with
// the same two checks as the watch page, and the winning line replayed. The
// full deal is used only here, after race_over has made it public.

import { BoardView } from "./board.js";
import { cardShort } from "./cards.js";
import { checkCommitment, checkDeal } from "./commitment.js";
import { el, formatMs, setChildren } from "./dom.js";
import { Game } from "./engine.js";

const $ = (id) => document.getElementById(id);
const STATUS_TEXT = { finished: "finished", stuck: "stuck", resigned: "resigned", left: "left",
  timed_out: "out of time", racing: "racing" };

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th";
  return `${n}${suffix}`;
}

/** "2 (+10 s)": undos and the time they added, for a standing. */
export function undoText(undos, penaltyMs) {
  return penaltyMs > 0 ? `${undos} (+${Math.round(penaltyMs / 1000)} s)` : String(undos);
}

/** One sentence for the player about their race. */
export function resultSentence(over, me) {
  const mine = over.standings.find((s) => s.player_id === me);
  const count = over.standings.length;
  if (!mine) return "The race is over.";
  const place = `${ordinal(mine.rank)} of ${count}`;
  if (mine.status === "finished") {
    return `Race over: you came ${place}, clearing all 28 cards in ${formatMs(mine.time_ms)}.`;
  }
  return `Race over: you came ${place} with ${mine.cleared} of 28 cards cleared (${STATUS_TEXT[mine.status] ?? mine.status}).`;
}

/** A standing's mark after the name: ghost, bot or guest (`marks`: member marks by id). */
export function standingMark(s, marks = new Map()) {
  const mark = s.ghost ? "ghost" : s.bot ? "bot" : marks.get(s.player_id);
  return mark ? el("span", { class: "muted", "data-mark": mark }, ` (${mark})`) : null;
}

/**
 * The seed, par and checks of race_over. A daily attempt's race_over keeps the seed,
 * deal and winning line back until its day (UTC) is over: it says so, and checks nothing.
 */
export function showReveal(over, commitment) {
  const secret = over.seed === null || over.seed === undefined;
  $("par").textContent = over.par === null ? (secret ? "shown when the day is over" : "unknown")
    : `${over.par} draws`;
  $("seed").textContent = secret ? `revealed when ${over.daily ?? "the day"} is over (UTC)` : over.seed;
  $("commitment").textContent = commitment ?? over.commitment;
  const winning = document.getElementById("winning-line");
  if (winning) winning.hidden = secret || !over.solution;
  if (secret) {
    for (const id of ["commit-check", "deal-check"]) {
      $(id).dataset.ok = "";
      $(id).textContent = "checkable once the day is over (the daily page)";
    }
    return;
  }
  const rules = { wrap: over.wrap, empty_waste: over.empty_waste };
  checkCommitment($("commit-check"), over.seed, rules, commitment ?? over.commitment);
  checkDeal($("deal-check"), over.seed, over.candidate, rules, over.deal);
}

/**
 * Fill the results panel from race_over; `commitment` is the one race_start promised,
 * `marks` the members' marks (ghost, bot, guest) by player id.
 */
export function showResults(over, me, commitment, marks = new Map()) {
  const rows = over.standings.map((s) => el("tr", {
    "data-player": s.player_id, "data-rank": s.rank, class: s.player_id === me ? "me" : null,
  }, [
    el("td", {}, String(s.rank)),
    el("th", { scope: "row" }, [s.name, standingMark(s, marks),
      s.player_id === me ? el("span", { class: "muted" }, " (you)") : null]),
    el("td", {}, s.status === "finished" ? formatMs(s.time_ms) : STATUS_TEXT[s.status] ?? s.status),
    el("td", {}, String(s.cleared)),
    el("td", { class: "optional" }, String(s.moves)),
    el("td", {}, undoText(s.undos, s.penalty_ms)),
  ]));
  setChildren($("standings").tBodies[0], rows);
  $("results-heading").textContent = over.practice ? "Race over · practice seed" : "Race over";
  $("result-line").textContent = resultSentence(over, me);
  $("race-link").href = `/races/${encodeURIComponent(over.race_id)}`;
  showReveal(over, commitment);
  $("results").hidden = false;
}

/** The winning line of race_over, stepped on its own board. */
export class WinningLine {
  constructor() {
    this.timer = null;
    $("solution-play").addEventListener("click", () => (this.timer ? this.pause() : this.play()));
    $("solution-back").addEventListener("click", () => { this.pause(); this.step(this.at - 1); });
    $("solution-forward").addEventListener("click", () => { this.pause(); this.step(this.at + 1); });
    $("solution-slider").addEventListener("input", (event) => {
      this.pause();
      this.step(Number(event.target.value));
    });
  }

  show(over) {
    const game = new Game({ ...over.deal, wrap: over.wrap, empty_waste: over.empty_waste });
    this.views = [game.view()];
    this.captions = ["The deal as dealt"];
    for (const move of over.solution) {
      const card = game.push(move);
      this.views.push(game.view());
      this.captions.push(move === "draw" ? `Draw ${cardShort(card)}` : `Play ${cardShort(card)}`);
    }
    this.board = new BoardView("Winning line");
    setChildren($("solution-board"), [this.board.root]);
    $("solution-slider").max = String(this.views.length - 1);
    $("solution").hidden = false;
    this.step(0);
    $("solution").scrollIntoView({ block: "nearest" });
    this.play();
  }

  step(at) {
    this.at = Math.max(0, Math.min(this.views.length - 1, at));
    this.board.update(this.views[this.at]);
    $("solution-slider").value = String(this.at);
    $("solution-step").textContent = `${this.at} / ${this.views.length - 1}`;
    $("solution-caption").textContent = this.captions[this.at];
  }

  play() {
    if (this.at >= this.views.length - 1) this.step(0);
    $("solution-play").textContent = "❚❚ Pause";
    this.timer = setInterval(() => {
      if (this.at >= this.views.length - 1) this.pause();
      else this.step(this.at + 1);
    }, 450);
  }

  pause() {
    clearInterval(this.timer);
    this.timer = null;
    $("solution-play").textContent = "▶ Play";
  }

  /** A new race: the old line goes, captions too (they name the old deal's cards). */
  hide() {
    this.pause();
    $("solution").hidden = true;
    setChildren($("solution-board"), []);
    $("solution-caption").textContent = "";
    $("solution-step").textContent = "0 / 0";
    $("solution-slider").max = "0";
    this.views = [];
    this.captions = [];
  }
}
