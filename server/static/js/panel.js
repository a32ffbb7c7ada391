// A player's panel: name, status, progress bar, counters and board.
// Shared by the live watch page and the stored-race replay.

import { BoardView, PEAK_CARDS } from "./board.js";
import { el, formatMs } from "./dom.js";

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

export class PlayerPanel {
  constructor(playerId, name) {
    this.playerId = playerId;
    this.name = name;
    this.nameNode = el("span", { class: "player-name" }, name);
    this.rankNode = el("span", { class: "player-rank" });
    this.statusNode = el("span", { class: "player-status", "data-status": "waiting" }, "waiting");
    this.offlineNode = el("span", { class: "player-offline", hidden: true }, "offline");
    this.progress = el("progress", {
      class: "progress", max: PEAK_CARDS, value: 0, "aria-label": `${name}: cards cleared`,
    });
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
        [this.rankNode, this.nameNode, this.offlineNode, this.statusNode]),
      this.progress,
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

  /** Counters from a progress frame or a replay step. */
  setProgress({ cleared, stock_left, moves, undos, status, elapsed_ms, finish_ms }) {
    if (cleared !== undefined) {
      this.progress.value = cleared;
      this.clearedNode.textContent = String(cleared);
      this.root.dataset.cleared = String(cleared);
    }
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

  /** A racer whose connection dropped keeps their seat for a while: say so. */
  setConnected(connected) {
    this.offlineNode.hidden = connected !== false;
  }

  setStatus(status) {
    this.statusNode.dataset.status = status;
    this.statusNode.textContent = STATUS_TEXT[status] ?? status;
  }

  setRank(rank) {
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
