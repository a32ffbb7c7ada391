// What the browser keeps between visits, in local storage: the player's name
// (asked once) and, per room, the reconnect token of the seat taken there, so
// that a reload or a reopened tab within the server's grace resumes the seat.

const NAME_KEY = "tripeaks.name";
const SEAT_PREFIX = "tripeaks.seat.";
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]+$/u;
export const NAME_MAX = 24;

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // storage switched off: the page still works, without resuming
  }
}

/** Why `name` cannot be a player's name (the protocol's rule), or null. */
export function nameProblem(name) {
  if (!name) return "Enter a name of 1 to 24 characters.";
  if ([...name].length > NAME_MAX) return "A name is at most 24 characters.";
  if (!PRINTABLE.test(name)) return "A name holds letters, digits, punctuation, symbols and spaces only.";
  return null;
}

export function savedName() {
  const name = storage()?.getItem(NAME_KEY)?.trim() ?? "";
  return nameProblem(name) ? "" : name;
}

export function saveName(name) {
  storage()?.setItem(NAME_KEY, name);
}

/** The reconnect token of this browser's seat in room `code`, or null. */
export function savedToken(code) {
  return storage()?.getItem(SEAT_PREFIX + code) ?? null;
}

export function saveToken(code, token) {
  storage()?.setItem(SEAT_PREFIX + code, token);
}

const KEYS_KEY = "tripeaks.keys";

/** A name as the server compares names (protocol/wire/names.py; case folding approximated). */
export function accountOf(name) {
  return name.normalize("NFKC").toLowerCase().normalize("NFKC").trim().split(/\s+/u).join(" ");
}

/** The secret key kept in this browser for the claimed name `name`, or null. */
export function savedKey(name) {
  try {
    const keys = JSON.parse(storage()?.getItem(KEYS_KEY) ?? "{}");
    const key = keys[accountOf(name)];
    return typeof key === "string" ? key : null;
  } catch {
    return null;
  }
}

export function forgetToken(code) {
  storage()?.removeItem(SEAT_PREFIX + code);
}
