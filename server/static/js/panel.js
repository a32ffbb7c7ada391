// A player's panel: name, status, progress bar, counters and board.
// Shared by the live watch page and the stored-race replay.
//
// Within a race a player's moves and undos only ever grow, so their sum numbers
// the player's states: a frame that shows fewer is older than what the panel
// shows (a catch-up replaying an old board, say) and must not roll it back.

import { BoardView, PEAK_CARDS } from "./board.js";
import { el, formatMs } from "./dom.js";
import { sortByStanding } from "./standing.js";

const STATUS_TEXT = {
  racing: "racing",
  finished: "finished",
  stuck: "stuck",
  resigned: "resigned",
  left: "left",
  timeout: "out of time",
  timed_out: "out of time",
  waiting: "waiting",
};

/** A standing's result in words: the time for a finisher, how the race ended otherwise. */
export function standingResult(status, timeMs) {
  return status === "finished" ? formatMs(timeMs) : (STATUS_TEXT[status] ?? status);
}

/** What a member is, in words after their name: "ghost", "bot", "guest" or nothing. */
export function memberMark(member) {
  if (member.ghost) return "ghost";
  if (member.bot) return "bot";
  return member.guest ? "guest" : "";
}

export class PlayerPanel {
  constructor(playerId, name) {
    this.playerId = playerId;
    this.name = name;
    this.nameNode = el("span", { class: "player-name" }, name);
    this.markNode = el("span", { class: "muted player-mark", hidden: true });
    this.rankNode = el("span", { class: "player-rank" });
    this.statusNode = el("span", { class: "player-status", "data-status": "waiting" }, "waiting");
    this.offlineNode = el("span", { class: "player-offline", hidden: true }, "offline");
    this.progress = el("progress", {
      class: "progress", max: PEAK_CARDS, value: 0, "aria-label": `${name}: cards cleared`,
    });
    // One notch per card over the bar, so 27 of 28 shows an empty notch.
    this.meter = el("div", { class: "meter" }, [this.progress, el("span", { class: "notches" })]);
    this.resetStanding();
    this.clearedNode = el("strong", {}, "0");
    this.stockNode = el("strong", {}, "–");
    this.movesNode = el("strong", {}, "0");
    this.undosNode = el("strong", {}, "0");
    this.timeNode = el("strong", {}, "–");
    this.board = new BoardView(name);
    this.summary = el("p", { class: "visually-hidden", "aria-live": "off" });
    this.root = el("section", {
      class: "panel player-panel",
      tabindex: "0",
      "data-player": playerId,
      "aria-label": `${name}'s board`,
    }, [
      el("div", { class: "player-head" },
        [this.rankNode, this.nameNode, this.markNode, this.offlineNode, this.statusNode]),
      this.meter,
      el("div", { class: "player-stats" }, [
        el("span", {}, [this.clearedNode, " / 28 cleared"]),
        el("span", {}, ["stock ", this.stockNode]),
        el("span", {}, ["moves ", this.movesNode]),
        el("span", {}, ["undos ", this.undosNode]),
        el("span", {}, ["time ", this.timeNode]),
      ]),
      this.summary,
      this.board.root,
    ]);
  }

  /** Mark the panel as a ghost's (a stored run), a bot's or a guest's (memberMark). */
  setMark(mark) {
    this.markNode.textContent = mark ? ` ${mark}` : "";
    this.markNode.hidden = !mark;
    this.root.dataset.mark = mark;
  }

  /** Forget the standing: a new race (or a replay jumping back) starts from nothing. */
  resetStanding() {
    this.cleared = 0;
    this.moves = 0;
    this.actions = -1;
    this.clearedAtMs = 0;
    this.rank = null;
    this.finished = false;
  }

  /**
   * True when a frame with these counts is not older than what the panel shows
   * (counts missing from the frame say nothing). Remembers the newest seen.
   */
  takesCounts(moves, undos) {
    if (moves === undefined || undos === undefined) return true;
    const actions = moves + undos;
    if (actions < this.actions) return false;
    this.actions = actions;
    return true;
  }

  /** Counters from a progress frame or a replay step; `at_ms` is when on the race clock. */
  setProgress({ cleared, stock_left, moves, undos, status, elapsed_ms, finish_ms, at_ms }) {
    if (cleared !== undefined) {
      if (cleared !== this.cleared) this.clearedAtMs = at_ms ?? elapsed_ms ?? this.clearedAtMs;
      this.cleared = cleared;
      this.progress.value = cleared;
      this.clearedNode.textContent = String(cleared);
      this.root.dataset.cleared = String(cleared);
      this.meter.dataset.full = cleared >= PEAK_CARDS ? "true" : "false";
    }
    if (moves !== undefined) this.moves = moves;
    if (stock_left !== undefined && stock_left !== null) this.stockNode.textContent = String(stock_left);
    if (moves !== undefined) this.movesNode.textContent = String(moves);
    if (undos !== undefined) this.undosNode.textContent = String(undos);
    if (status) this.setStatus(status);
    if (finish_ms !== undefined && finish_ms !== null) this.timeNode.textContent = formatMs(finish_ms);
    else if (elapsed_ms !== undefined && elapsed_ms !== null) {
      this.timeNode.textContent = formatMs(elapsed_ms);
    }
    this.summary.textContent = `${this.name}: ${this.clearedNode.textContent} of 28 cleared, ` +
      `${this.statusNode.textContent}`;
  }

  /**
   * The player's name, once known: a panel made from a race frame that came before
   * the room state (a spectator catching up after a reconnect) shows the id till then.
   */
  rename(name) {
    if (name === this.name) return;
    this.name = name;
    this.nameNode.textContent = name;
    this.progress.setAttribute("aria-label", `${name}: cards cleared`);
    this.root.setAttribute("aria-label", `${name}'s board`);
    this.board.relabel(name);
  }

  /** A racer whose connection dropped keeps their seat for a while: say so. */
  setConnected(connected) {
    this.offlineNode.hidden = connected !== false;
  }

  setStatus(status) {
    this.finished = status === "finished";
    this.statusNode.dataset.status = status;
    this.statusNode.textContent = STATUS_TEXT[status] ?? status;
  }

  setRank(rank) {
    this.rank = rank ?? null;
    this.rankNode.textContent = rank ? `#${rank}` : "";
  }

  /** Draw a board frame: {board, waste_top, stock_left}. */
  setBoard(view) {
    this.board.update(view);
    if (view.stock_left !== undefined && view.stock_left !== null) {
      this.stockNode.textContent = String(view.stock_left);
    }
  }
}

/**
 * The panels in standing order (standing.js). Once the race is over (`final`),
 * every panel with a rank is placed by it.
 */
export function byStanding(panels, final = false) {
  return sortByStanding(panels, (p) => ({ finished: final || p.finished, rank: p.rank,
    cleared: p.cleared, reachedAtMs: p.clearedAtMs, moves: p.moves }));
}
