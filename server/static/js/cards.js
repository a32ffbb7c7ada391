// Card drawing: a card code ("QH", "TD") becomes a real-looking card made of
// CSS and text glyphs. Only what the caller passes in is ever drawn: a face-down
// position is drawn from the "??" marker alone, so a hidden card cannot reach
// the page through this module.

import { el } from "./dom.js";

export const HIDDEN = "??";
const RANKS = "A23456789TJQK";
const SUITS = "CDHS";
const RANK_NAMES = ["Ace", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine",
  "Ten", "Jack", "Queen", "King"];
const RANK_SHORT = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const SUIT_NAMES = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const SUIT_GLYPHS = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };

/** True for a well-formed card code such as "QH". */
export function isCardCode(code) {
  return typeof code === "string" && code.length === 2 &&
    RANKS.includes(code[0]) && SUITS.includes(code[1]);
}

/** Spoken name of a card code: "QH" -> "Queen of hearts". */
export function cardName(code) {
  if (!isCardCode(code)) return "unknown card";
  return `${RANK_NAMES[RANKS.indexOf(code[0])]} of ${SUIT_NAMES[code[1]]}`;
}

/** Short printed form with a suit glyph: "QH" -> "Q♥", "TD" -> "10♦". */
export function cardShort(code) {
  if (!isCardCode(code)) return "?";
  return RANK_SHORT[RANKS.indexOf(code[0])] + SUIT_GLYPHS[code[1]];
}

/** Rank index 0 (ace) .. 12 (king). */
export function rankIndex(code) {
  return RANKS.indexOf(code[0]);
}

/** A face-up card element. */
export function faceUpCard(code) {
  const rank = RANK_SHORT[RANKS.indexOf(code[0])];
  const glyph = SUIT_GLYPHS[code[1]];
  const red = code[1] === "H" || code[1] === "D";
  return el("div", {
    class: `card face-up ${red ? "red" : "black"}`,
    role: "img",
    "aria-label": cardName(code),
  }, [
    el("span", { class: "corner top", "aria-hidden": "true" }, [
      el("span", { class: "rank" }, rank), el("span", { class: "suit" }, glyph)]),
    el("span", { class: "pip", "aria-hidden": "true" }, glyph),
    el("span", { class: "corner bottom", "aria-hidden": "true" }, [
      el("span", { class: "rank" }, rank), el("span", { class: "suit" }, glyph)]),
  ]);
}

/** A face-down card element: the back only, nothing about the card. */
export function faceDownCard() {
  return el("div", { class: "card face-down", role: "img", "aria-label": "face-down card" });
}

/** An empty slot where a card used to be (no label: there is nothing to name). */
export function emptySlot(label = null) {
  const attrs = { class: "card slot" };
  if (label) {
    attrs.role = "img";
    attrs["aria-label"] = label;
  } else {
    attrs["aria-hidden"] = "true";
  }
  return el("div", attrs);
}

/** The element for one board entry: a code, HIDDEN, or null once played. */
export function cardFor(entry) {
  if (entry === null || entry === undefined) return emptySlot();
  if (entry === HIDDEN) return faceDownCard();
  if (isCardCode(entry)) return faceUpCard(entry);
  return emptySlot("unknown card");
}
