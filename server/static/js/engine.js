// A small TriPeaks engine for replays, following docs/rules.md and protocol/rules/game.py.
// It is only used on data the server has already made public: a stored race
// (GET /api/races/ID) or the deal revealed at race over.

import { HIDDEN, rankIndex } from "./cards.js";
import { coveredBy, PEAK_CARDS } from "./board.js";

export class ReplayError extends Error {}

function adjacent(a, b, wrap) {
  const diff = Math.abs(rankIndex(a) - rankIndex(b));
  return diff === 1 || (wrap && diff === 12);
}

/** One player's game on a fully known deal: {peaks, waste, stock, wrap}. */
export class Game {
  constructor(deal) {
    if (!Array.isArray(deal.peaks) || deal.peaks.length !== PEAK_CARDS) {
      throw new ReplayError("the deal needs 28 peak cards");
    }
    this.deal = deal;
    this.wrap = deal.wrap !== false;
    this.removed = new Array(PEAK_CARDS).fill(false);
    this.drawn = 0;
    this.waste = deal.waste ? [deal.waste] : [];
    this.history = [];
    this.moves = 0;
    this.draws = 0;
    this.undos = 0;
  }

  get cleared() { return this.removed.filter(Boolean).length; }
  get stockLeft() { return this.deal.stock.length - this.drawn; }
  get wasteTop() { return this.waste.length ? this.waste[this.waste.length - 1] : null; }

  isFaceUp(position) { return coveredBy(position).every((q) => this.removed[q]); }

  /** Play the card at `position`; throws ReplayError when the rules forbid it. */
  play(position) {
    if (!Number.isInteger(position) || position < 0 || position >= PEAK_CARDS) {
      throw new ReplayError(`no such position: ${position}`);
    }
    if (this.removed[position]) throw new ReplayError(`position ${position} was already played`);
    if (!this.isFaceUp(position)) throw new ReplayError(`position ${position} is still covered`);
    const card = this.deal.peaks[position];
    const top = this.wasteTop;
    if (top !== null && !adjacent(card, top, this.wrap)) {
      throw new ReplayError(`${card} does not fit on ${top}`);
    }
    this.removed[position] = true;
    this.waste.push(card);
    this.history.push(position);
    this.moves += 1;
    return card;
  }

  /** Turn the next stock card onto the waste. */
  draw() {
    if (this.stockLeft === 0) throw new ReplayError("the stock is empty");
    const card = this.deal.stock[this.drawn];
    this.drawn += 1;
    this.waste.push(card);
    this.history.push("draw");
    this.moves += 1;
    this.draws += 1;
    return card;
  }

  /** Take back the last play or draw. */
  undo() {
    if (!this.history.length) throw new ReplayError("nothing to undo");
    const move = this.history.pop();
    this.waste.pop();
    if (move === "draw") this.drawn -= 1;
    else this.removed[move] = false;
    this.undos += 1;
    return move;
  }

  /** Apply a move: a position, "draw" or "undo". */
  push(move) {
    if (move === "draw") return this.draw();
    if (move === "undo") return this.undo();
    return this.play(move);
  }

  /** What the player sees: the same shape as a spectator board frame. */
  view() {
    const board = [];
    for (let p = 0; p < PEAK_CARDS; p += 1) {
      if (this.removed[p]) board.push(null);
      else if (this.isFaceUp(p)) board.push(this.deal.peaks[p]);
      else board.push(HIDDEN);
    }
    return {
      board,
      waste_top: this.wasteTop,
      stock_left: this.stockLeft,
      cleared: this.cleared,
      moves: this.moves,
      undos: this.undos,
    };
  }
}
