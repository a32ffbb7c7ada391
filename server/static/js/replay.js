// /races/ID: a stored race replayed on one timeline. Every player's accepted
// moves are merged in server-time order; the slider picks how many of them
// have happened, and each board shows that player's view at that point.

import { cardShort } from "./cards.js";
import { checkCommitment, checkDeal } from "./commitment.js";
import { el, formatMs, setChildren, showMessage } from "./dom.js";
import { Game, ReplayError } from "./engine.js";
import { raceThisRunHref } from "./ghostlink.js";
import { memberMark, PlayerPanel, standingResult } from "./panel.js";

const $ = (id) => document.getElementById(id);
const FINAL = new Set(["resign", "timeout", "leave"]);
// protocol.rules.game.Reason values, as in docs/protocol.md.
const REASONS = {
  1: "covered", 2: "not adjacent", 3: "already played", 4: "stock empty",
  5: "nothing to undo", 6: "game over", 7: "no such position", 8: "undo not allowed",
};
const FINAL_STATUS = { resign: "resigned", timeout: "timeout", leave: "left" };

/** The race id from /races/ID. */
function raceIdFromPath() {
  const match = /^\/races\/([^/]+)\/?$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]) : "";
}

/**
 * Build each player's list of states, and the merged timeline of events.
 * Returns {tracks: [{player, states: [view...], events: [...]}], timeline: [{track, index, at}]}.
 */
export function buildTimeline(race) {
  const deal = { peaks: race.peaks, waste: race.waste, stock: race.stock, wrap: race.wrap };
  const tracks = race.players.map((player) => {
    const game = new Game(deal);
    const start = { ...game.view(), status: "racing", at: 0 };
    const states = [start];
    const events = [];
    for (const entry of player.log ?? []) {
      if (!entry.accepted) continue;
      let caption;
      let status = "racing";
      if (FINAL.has(entry.action)) {
        status = FINAL_STATUS[entry.action];
        caption = `${player.name} ${status === "timeout" ? "ran out of time" : status}`;
      } else {
        const move = entry.action === "play" ? entry.position : entry.action;
        const card = game.push(move);
        if (entry.action === "play") caption = `${player.name} played ${cardShort(card)}`;
        else if (entry.action === "draw") caption = `${player.name} drew ${cardShort(card)}`;
        else caption = `${player.name} took back a move`;
        if (game.cleared === 28) {
          status = "finished";
          caption += " and finished";
        }
      }
      states.push({ ...game.view(), status, at: entry.at_ms });
      events.push({ at: entry.at_ms, caption });
    }
    return { player, states, events };
  });
  const timeline = [];
  tracks.forEach((track, t) => track.events.forEach((event, i) => {
    timeline.push({ track: t, index: i + 1, at: event.at, caption: event.caption });
  }));
  // Stable sort: equal times keep rank order, then log order.
  timeline.sort((a, b) => a.at - b.at);
  return { tracks, timeline };
}

/** One player's move log as a table; accepted moves can be jumped to. */
function logTable(raceId, player, steps, onJump) {
  let accepted = 0;
  const rows = (player.log ?? []).map((entry) => {
    const step = entry.accepted ? steps.get(++accepted) : undefined;
    const what = entry.action === "play"
      ? `play ${entry.card ? cardShort(entry.card) : `position ${entry.position}`}`
      : entry.action === "draw" && entry.card ? `draw ${cardShort(entry.card)}` : entry.action;
    const time = step === undefined
      ? formatMs(entry.at_ms)
      : el("button", { type: "button", class: "link-button", onclick: () => onJump(step) },
        formatMs(entry.at_ms));
    return el("tr", { class: entry.accepted ? "" : "refused" }, [
      el("td", {}, entry.seq ? String(entry.seq) : "–"),
      el("td", {}, time),
      el("td", {}, what),
      el("td", {}, entry.accepted ? "accepted" : `refused: ${REASONS[entry.reason] ?? entry.reason}`),
    ]);
  });
  return el("details", { class: "panel log" }, [
    el("summary", {}, `${player.name}: ${(player.log ?? []).length} entries`),
    el("p", {}, el("a", { class: "button race-run", href: raceThisRunHref(raceId, player.player_id) },
      `Race ${player.name}'s run`)),
    el("div", { class: "table-wrap" }, el("table", { class: "standings" }, [
      el("thead", {}, el("tr", {}, ["#", "Time", "Move", "Result"].map(
        (h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows),
    ])),
  ]);
}

class Replay {
  constructor(race) {
    this.race = race;
    const { tracks, timeline } = buildTimeline(race);
    this.tracks = tracks;
    this.timeline = timeline;
    this.step = 0;
    this.timer = null;
    this.panels = tracks.map((track) => new PlayerPanel(track.player.player_id, track.player.name));
    setChildren($("boards"), this.panels.map((panel) => panel.root));
    // steps[t]: the timeline step at which track t's i-th accepted move happens.
    const steps = tracks.map(() => new Map());
    timeline.forEach((event, k) => steps[event.track].set(event.index, k + 1));
    setChildren($("logs"), tracks.map((track, t) => logTable(race.race_id, track.player, steps[t], (step) => {
      this.pause();
      this.show(step);
      $("slider").focus();
    })));
    // positions[k][t]: how many of track t's events have happened after k timeline steps.
    this.positions = [tracks.map(() => 0)];
    for (const event of timeline) {
      const next = [...this.positions[this.positions.length - 1]];
      next[event.track] = event.index;
      this.positions.push(next);
    }
    const slider = $("slider");
    slider.max = String(timeline.length);
    slider.addEventListener("input", () => this.show(Number(slider.value)));
    $("play").addEventListener("click", () => (this.timer ? this.pause() : this.play()));
    $("back").addEventListener("click", () => { this.pause(); this.show(this.step - 1); });
    $("forward").addEventListener("click", () => { this.pause(); this.show(this.step + 1); });
    this.show(0);
  }

  timeAt(step) {
    return step === 0 ? 0 : this.timeline[step - 1].at;
  }

  show(step) {
    const clamped = Math.max(0, Math.min(this.timeline.length, step));
    this.step = clamped;
    $("slider").value = String(clamped);
    const at = this.timeAt(clamped);
    const total = this.timeAt(this.timeline.length);
    $("time").textContent = `${formatMs(at)} / ${formatMs(total)}`;
    $("slider").setAttribute("aria-valuetext", `move ${clamped} of ${this.timeline.length}, ${formatMs(at)}`);
    $("caption").textContent = clamped === 0
      ? "Start of the race"
      : `${formatMs(at)} · ${this.timeline[clamped - 1].caption}`;
    this.positions[clamped].forEach((index, t) => {
      const state = this.tracks[t].states[index];
      const panel = this.panels[t];
      panel.setBoard(state);
      const player = this.tracks[t].player;
      const finished = state.status === "finished";
      panel.setProgress({
        cleared: state.cleared,
        stock_left: state.stock_left,
        moves: state.moves,
        undos: state.undos,
        status: state.status,
        elapsed_ms: state.at,
        finish_ms: finished ? player.finish_ms : null,
      });
      panel.setRank(finished || clamped === this.timeline.length ? player.rank : null);
    });
    $("back").disabled = clamped === 0;
    $("forward").disabled = clamped === this.timeline.length;
  }

  play() {
    if (this.step >= this.timeline.length) this.show(0);
    $("play").textContent = "❚❚ Pause";
    const tick = () => {
      if (this.step >= this.timeline.length) { this.pause(); return; }
      const speed = Number($("speed").value) || 1;
      const wait = (this.timeAt(this.step + 1) - this.timeAt(this.step)) / speed;
      this.timer = setTimeout(() => { this.show(this.step + 1); tick(); },
        Math.max(30, Math.min(wait, 1500)));
    };
    tick();
  }

  pause() {
    clearTimeout(this.timer);
    this.timer = null;
    $("play").textContent = "▶ Play";
  }
}

/** The watch page's mark (panel.js memberMark): ghost, bot or guest (no claimed name). */
function playerMark(player) {
  const mark = memberMark({ ghost: player.ghost, bot: player.is_bot, guest: player.account === null });
  return mark ? el("span", { class: "muted" }, ` (${mark})`) : null;
}

/** The stored standings: a finisher's time, or how the race ended for them, in one column
 * (as on the watch page), so that the table fits a phone with every column. */
function fillStandings(race) {
  const rows = race.players.map((player) => el("tr", { "data-player": player.player_id }, [
    el("td", {}, String(player.rank)),
    el("th", { scope: "row" }, [player.name, playerMark(player)]),
    el("td", {}, standingResult(player.status, player.finish_ms)),
    el("td", {}, String(player.cleared)),
    el("td", {}, String(player.moves)),
  ]));
  setChildren($("standings").tBodies[0], rows);
}

async function main() {
  const raceId = raceIdFromPath();
  const message = $("message");
  if (!raceId) {
    showMessage(message, "No race id in the address: use /races/ID.", "error");
    return;
  }
  let race;
  try {
    const response = await fetch(`/api/races/${encodeURIComponent(raceId)}`);
    if (response.status === 404) {
      showMessage(message, `There is no stored race with id “${raceId}”.`, "error");
      return;
    }
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    race = await response.json();
  } catch (error) {
    showMessage(message, `Could not load race “${raceId}”: ${error.message}.`, "error");
    return;
  }
  // Named by its room and time: the hex race id means nothing to a reader.
  const when = new Date(race.started_at_ms).toLocaleString();
  const practice = race.practice ? " (practice)" : "";
  $("race-title").textContent = `${race.room_name}${practice} · ${when}`;
  document.title = `${race.room_name}${practice}, ${when} · TriPeaks Race`;
  $("race-room").textContent = `${race.room_name} (${race.room_code})`;
  $("race-started").textContent = new Date(race.started_at_ms).toLocaleString();
  $("race-par").textContent = race.par === null ? "unknown" : `${race.par} draws`;
  $("race-rules").textContent = `${race.wrap ? "wrap" : "no wrap"}${race.empty_waste ? ", empty waste" : ""}`;
  $("race-seed").textContent = race.seed;
  $("race-commitment").textContent = race.commitment;
  fillStandings(race);
  $("race").hidden = false;
  try {
    new Replay(race);
  } catch (error) {
    const why = error instanceof ReplayError ? error.message : String(error);
    showMessage(message, `This race's move log does not replay: ${why}.`, "error");
  }
  const rules = { wrap: race.wrap, empty_waste: race.empty_waste };
  checkCommitment($("commit-check"), race.seed, rules, race.commitment);
  checkDeal($("deal-check"), race.seed, race.candidate, rules,
    { peaks: race.peaks, waste: race.waste, stock: race.stock });
}

main();
