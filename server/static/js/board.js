// One player's board: the three peaks, the waste top and the stock.
// Cards sit at fixed spots computed from the layout (docs/web.md), and each
// spot is redrawn only when its entry changes.

import { el } from "./dom.js";
import { cardFor, cardName, faceDownCard, emptySlot, faceUpCard, HIDDEN, isCardCode }
  from "./cards.js";

export const PEAK_CARDS = 28;

// Horizontal spot of each position, in card widths from the left edge of the
// bottom row; each row sits half a card to the right of the row below it.
function spotOf(position) {
  if (position >= 18) return { x: position - 18, row: 3 };
  if (position >= 9) return { x: position - 9 + 0.5, row: 2 };
  if (position >= 3) {
    const m = position - 3;
    const k = 3 * Math.floor(m / 2) + (m % 2);
    return { x: k + 1, row: 1 };
  }
  return { x: 3 * position + 1.5, row: 0 };
}

export const SPOTS = Array.from({ length: PEAK_CARDS }, (_, p) => spotOf(p));

/** Positions lying on top of `position` (docs/rules.md). */
export function coveredBy(position) {
  if (position >= 18) return [];
  if (position >= 9) return [position + 9, position + 10];
  if (position >= 3) {
    const m = position - 3;
    const k = 3 * Math.floor(m / 2) + (m % 2);
    return [9 + k, 10 + k];
  }
  return [3 + 2 * position, 4 + 2 * position];
}

/** A board widget; call update(view) with {board, waste_top, stock_left}. */
export class BoardView {
  constructor(label) {
    this.entries = new Array(PEAK_CARDS).fill(undefined);
    this.wasteEntry = undefined;
    this.stockEntry = undefined;
    this.spots = SPOTS.map((spot, position) => el("div", {
      class: "spot",
      "data-pos": position,
      style: { "--x": spot.x, "--row": spot.row },
    }));
    this.peaks = el("div", { class: "peaks", role: "group", "aria-label": `${label}: peaks` },
      this.spots);
    this.waste = el("div", { class: "pile waste", "data-pile": "waste" });
    this.stock = el("div", { class: "pile stock", "data-pile": "stock" });
    this.stockCount = el("span", { class: "stock-count" });
    this.root = el("div", { class: "board" }, [
      this.peaks,
      el("div", { class: "piles" }, [
        el("div", { class: "pile-box" }, [this.stock, this.stockCount]),
        el("div", { class: "pile-box" }, [this.waste, el("span", { class: "pile-name" }, "waste")]),
      ]),
    ]);
    this.update({ board: new Array(PEAK_CARDS).fill(HIDDEN), waste_top: null, stock_left: null });
  }

  /** Name the board for whom it shows (the label given at first was a stand-in). */
  relabel(label) {
    this.peaks.setAttribute("aria-label", `${label}: peaks`);
  }

  /** Draw a player view; entries (and the waste top) are card codes, "??" or null. */
  update(view) {
    const board = Array.isArray(view.board) ? view.board : [];
    for (let p = 0; p < PEAK_CARDS; p += 1) {
      const entry = board[p] === undefined ? HIDDEN : board[p];
      if (entry === this.entries[p]) continue;
      this.entries[p] = entry;
      this.spots[p].replaceChildren(cardFor(entry));
      this.spots[p].dataset.state = entry === null ? "played" : entry === HIDDEN ? "down" : "up";
    }
    const waste = view.waste_top ?? null;
    if (waste !== this.wasteEntry) {
      this.wasteEntry = waste;
      // A spectator board may show the waste top face down ("??"): a card that a
      // racer still racing has not seen (docs/protocol.md, "Spectating").
      this.waste.replaceChildren(isCardCode(waste) ? faceUpCard(waste)
        : waste === HIDDEN ? faceDownCard() : emptySlot("empty waste pile"));
      const top = this.waste.firstChild;
      if (isCardCode(waste)) top.setAttribute("aria-label", `waste: ${cardName(waste)}`);
      if (waste === HIDDEN) top.setAttribute("aria-label", "waste: face-down card");
    }
    const stock = view.stock_left ?? null;
    if (stock !== this.stockEntry) {
      this.stockEntry = stock;
      const label = stock === null ? "stock" : `stock: ${stock} card${stock === 1 ? "" : "s"} left`;
      const card = stock === 0 ? emptySlot(label) : faceDownCard();
      card.setAttribute("aria-label", label);
      this.stock.replaceChildren(card);
      this.stockCount.textContent = stock === null ? "stock" : `${stock} left`;
    }
  }
}
