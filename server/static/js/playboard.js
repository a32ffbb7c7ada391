// The player's own board: every card a button named after the card ("Queen
// of hearts") or "face-down card", the stock a button named "Draw", the
// terminal client's keys on the cards, playable cards highlighted. It is drawn
// only from the player's own view (race_start, move_result, resync), so it
// never holds a card the player has not uncovered.

import { PEAK_CARDS, SPOTS } from "./board.js";
import { cardName, emptySlot, faceDownCard, faceUpCard, HIDDEN, isCardCode, rankIndex }
  from "./cards.js";
import { el } from "./dom.js";

// The keys follow the keyboard upside down, as in the terminal client
// (client_cli/render.py): q w e the tops, z..n row 1, a..l row 2, 1..0 the bottom row.
const KEYS_BY_ROW = ["qwe", "zxcvbn", "asdfghjkl", "1234567890"];
export const HOTKEYS = KEYS_BY_ROW.join("").split("");
export const POSITION_OF_KEY = Object.freeze(Object.fromEntries(HOTKEYS.map((k, p) => [k, p])));

export const Reason = Object.freeze({
  COVERED: 1, NOT_ADJACENT: 2, ALREADY_PLAYED: 3, STOCK_EMPTY: 4, NOTHING_TO_UNDO: 5,
  GAME_OVER: 6, NO_SUCH_POSITION: 7, UNDO_NOT_ALLOWED: 8,
});

/** True when `card` goes on `top` (any card on an empty waste). */
export function fits(card, top, wrap) {
  if (!isCardCode(top)) return true;
  const diff = Math.abs(rankIndex(card) - rankIndex(top));
  return diff === 1 || (wrap && diff === 12);
}

/**
 * The reason the rules (docs/rules.md) refuse a move on a view the page knows
 * exactly, or null when it may go. `rules`: {wrap, undo} with undo false when off.
 */
export function refusalOf(view, move, rules) {
  const over = view.status === "won" || view.status === "stuck";
  if (move.action === "undo") {
    if (!rules.undo) return Reason.UNDO_NOT_ALLOWED;
    if (view.status === "won") return Reason.GAME_OVER;
    return view.moves - view.undos > 0 ? null : Reason.NOTHING_TO_UNDO;
  }
  if (over) return Reason.GAME_OVER;
  if (move.action === "draw") return view.stock_left > 0 ? null : Reason.STOCK_EMPTY;
  const p = move.position;
  if (!Number.isInteger(p) || p < 0 || p >= PEAK_CARDS) return Reason.NO_SUCH_POSITION;
  const entry = view.board[p];
  if (entry === null) return Reason.ALREADY_PLAYED;
  if (!isCardCode(entry)) return Reason.COVERED;
  return fits(entry, view.waste_top, rules.wrap) ? null : Reason.NOT_ADJACENT;
}

/** Apply an accepted move_result to a view (docs/protocol.md, "Keeping the board"). */
export function applyResult(view, result) {
  const board = [...view.board];
  if (result.action === "play") {
    board[result.position] = null;
    for (const { position, card } of result.uncovered) board[position] = card;
  } else if (result.action === "undo" && result.undone === "play") {
    board[result.position] = result.card;
    for (const position of result.hidden) board[position] = HIDDEN;
  }
  return {
    board, waste_top: result.waste_top, stock_left: result.stock_left, moves: result.moves,
    draws: result.draws, undos: result.undos, status: result.status,
  };
}

/** A blank board before the deal: every spot a card back, nothing known. */
export function blankView() {
  return { board: new Array(PEAK_CARDS).fill(HIDDEN), waste_top: null, stock_left: null,
    moves: 0, draws: 0, undos: 0, status: "playing" };
}

export class PlayBoard {
  /** onPlay(position) and onDraw() run when a card or the stock is pressed. */
  constructor({ onPlay, onDraw }) {
    this.entries = new Array(PEAK_CARDS).fill(undefined);
    this.playable = new Array(PEAK_CARDS).fill(false);
    this.spots = SPOTS.map((spot, position) => el("div", {
      class: "spot", "data-pos": position, style: { "--x": spot.x, "--row": spot.row },
    }));
    this.onPlay = onPlay;
    this.stockCount = el("span", { class: "stock-count", id: "stock-count" }, "");
    this.stockButton = el("button", {
      type: "button", class: "card-button stock-button", id: "draw", "aria-label": "Draw",
      "aria-describedby": "stock-count", "aria-keyshortcuts": "Space", onclick: () => onDraw(),
    });
    this.waste = el("div", { class: "pile waste", "data-pile": "waste" });
    this.root = el("div", { class: "board play-board" }, [
      el("div", { class: "peaks", role: "group", "aria-label": "Your peaks" }, this.spots),
      el("div", { class: "piles" }, [
        el("div", { class: "pile-box" }, [el("div", { class: "pile stock" }, this.stockButton),
          this.stockCount]),
        el("div", { class: "pile-box" }, [this.waste, el("span", { class: "pile-name" }, "waste")]),
      ]),
    ]);
    this.wasteEntry = undefined;
    this.stockEntry = undefined;
    this.update(blankView(), { wrap: true, live: false });
  }

  /** Draw `view`; `live` false (before the start, after the end) shows no highlights. */
  update(view, { wrap, live }) {
    const refocus = this.root.contains(document.activeElement);
    for (let p = 0; p < PEAK_CARDS; p += 1) {
      const entry = view.board[p] === undefined ? HIDDEN : view.board[p];
      const playable = live && isCardCode(entry) && fits(entry, view.waste_top, wrap);
      if (entry === this.entries[p] && playable === this.playable[p]) continue;
      if (entry !== this.entries[p]) this.spots[p].replaceChildren(this.cardButton(p, entry));
      this.entries[p] = entry;
      this.playable[p] = playable;
      this.spots[p].dataset.state = entry === null ? "played" : entry === HIDDEN ? "down" : "up";
      this.spots[p].firstChild.classList.toggle("playable", playable);
    }
    this.drawPiles(view);
    // A played card's button is gone: keep keyboard focus on the board.
    if (refocus && !this.root.contains(document.activeElement)) this.stockButton.focus();
  }

  cardButton(position, entry) {
    if (entry === null) return emptySlot();
    const face = entry === HIDDEN ? faceDownCard() : faceUpCard(entry);
    face.setAttribute("aria-hidden", "true");
    const key = HOTKEYS[position];
    return el("button", {
      type: "button", class: "card-button", "aria-label": entry === HIDDEN ? "face-down card" : cardName(entry),
      "aria-keyshortcuts": key, onclick: () => this.onPlay(position),
    }, [face, el("span", { class: "key", "aria-hidden": "true" }, key)]);
  }

  drawPiles(view) {
    const waste = view.waste_top ?? null;
    if (waste !== this.wasteEntry) {
      this.wasteEntry = waste;
      const top = isCardCode(waste) ? faceUpCard(waste) : emptySlot("empty waste pile");
      if (isCardCode(waste)) top.setAttribute("aria-label", `waste: ${cardName(waste)}`);
      this.waste.replaceChildren(top);
    }
    const stock = view.stock_left ?? null;
    if (stock !== this.stockEntry) {
      this.stockEntry = stock;
      const back = stock === 0 ? emptySlot() : faceDownCard();
      back.setAttribute("aria-hidden", "true");
      this.stockButton.replaceChildren(back, el("span", { class: "key", "aria-hidden": "true" }, "space"));
      this.stockCount.textContent = stock === null ? "stock"
        : `${stock} card${stock === 1 ? "" : "s"} left`;
    }
  }
}
