// The room options (RoomOptions in docs/protocol.md) as form fields, read
// back with the protocol's ranges, and in words for the lobby. Used by the
// front page's "Create a room" and by the host's options on /play/CODE.
// tests/server/web/test_options_js.py holds the defaults, ranges and choices
// repeated here to protocol/wire/messages.py.

import { el } from "./dom.js";

export const DEFAULT_OPTIONS = Object.freeze({
  name: "TriPeaks race", public: false, max_players: 8, allow_spectators: true,
  spectator_delay_s: 0, open_boards: false, wrap: true, empty_waste: false, undo: "penalty", undo_penalty_s: 5,
  countdown_s: 3, time_limit_s: 0, difficulty: "any", practice_seed: null,
});

// [key, label, kind, extra]; the first two are always shown, the rest sit under "More options".
const FIELDS = [
  ["name", "Room name", "text", { max: 40 }],
  ["public", "Public: listed on the front page", "check"],
  ["max_players", "Seats", "number", { min: 2, max: 16 }],
  ["undo", "Undo", "select", { choices: [["penalty", "with a time penalty"], ["free", "free"], ["off", "off"]] }],
  ["undo_penalty_s", "Undo penalty (seconds)", "number", { min: 0, max: 300 }],
  ["wrap", "King and Ace are adjacent (wrap)", "check"],
  ["empty_waste", "Start with an empty waste", "check"],
  ["difficulty", "Deal", "select", { choices: [["any", "any winnable deal"], ["easy", "easy (par 11 or less)"], ["medium", "medium (par 12 to 15)"], ["hard", "hard (par 16 or more)"]] }],
  ["countdown_s", "Countdown (seconds)", "number", { min: 0, max: 30 }],
  ["time_limit_s", "Time limit (seconds, 0: none)", "number", { min: 0, max: 3600 }],
  ["allow_spectators", "Spectators may watch", "check"],
  ["spectator_delay_s", "Spectator delay (seconds)", "number", { min: 0, max: 600 }],
  ["open_boards", "Open boards for a broadcast (needs a spectator delay of 30 s or more)", "check"],
  ["practice_seed", "Practice seed (optional: a known deal)", "text", { max: 64, optional: true }],
];
const SHOWN = 2;
// Open boards show spectators every card: only a broadcast delay this long keeps
// them from helping a racer (RoomOptions.open_boards in docs/protocol.md).
export const OPEN_BOARDS_MIN_DELAY_S = 30;
const OPEN_BOARDS_WORDS = `open boards need a spectator delay of ${OPEN_BOARDS_MIN_DELAY_S} seconds or more`;
const OPEN_BOARDS_PROBLEM = `O${OPEN_BOARDS_WORDS.slice(1)}.`;

function field(prefix, [key, label, kind, extra = {}], value) {
  const id = `${prefix}-${key.replaceAll("_", "-")}`;
  let input;
  if (kind === "check") {
    input = el("input", { type: "checkbox", id, name: key, checked: value === true });
    return el("div", { class: "field check" }, [input, el("label", { for: id }, label)]);
  }
  if (kind === "select") {
    input = el("select", { id, name: key },
      extra.choices.map(([v, text]) => el("option", { value: v, selected: v === value }, text)));
  } else {
    input = el("input", {
      type: kind === "number" ? "number" : "text", id, name: key, autocomplete: "off",
      min: extra.min, max: kind === "number" ? extra.max : null,
      maxlength: kind === "text" ? extra.max : null, inputmode: kind === "number" ? "numeric" : null,
    });
    input.value = value === null || value === undefined ? "" : String(value);
  }
  return el("div", { class: "field" }, [el("label", { for: id }, label), input]);
}

/** Fill `container` with the option fields, set to `options`. */
export function buildOptionsFields(container, options = DEFAULT_OPTIONS, prefix = "opt") {
  const values = { ...DEFAULT_OPTIONS, ...options };
  const all = FIELDS.map((spec) => field(prefix, spec, values[spec[0]]));
  container.replaceChildren(
    ...all.slice(0, SHOWN),
    el("details", { class: "more-options" }, [el("summary", {}, "More options"),
      el("div", { class: "option-grid" }, all.slice(SHOWN))]),
  );
}

/** The options in `container`: {options} or {problem, input} for the first bad field. */
export function readOptions(container) {
  let read = readFields(container);
  if (read.options?.open_boards && read.options.spectator_delay_s < OPEN_BOARDS_MIN_DELAY_S) {
    read = { problem: OPEN_BOARDS_PROBLEM, input: container.querySelector('[name="spectator_delay_s"]') };
  }
  read.input?.closest("details")?.setAttribute("open", ""); // so the bad field can take focus
  return read;
}

/** The server's refusal of a room's options (an error message) in words, no full stop. */
export function optionsRefusal(error) {
  if (/open_boards/.test(error.message ?? "")) return OPEN_BOARDS_WORDS;
  return error.message;
}

function readFields(container) {
  const options = {};
  for (const [key, label, kind, extra = {}] of FIELDS) {
    const input = container.querySelector(`[name="${key}"]`);
    if (kind === "check") { options[key] = input.checked; continue; }
    const text = input.value.trim();
    if (kind === "number") {
      const number = Number(text);
      if (text === "" || !Number.isInteger(number) || number < extra.min || number > extra.max) {
        return { problem: `${label}: a whole number from ${extra.min} to ${extra.max}.`, input };
      }
      options[key] = number;
    } else if (kind === "text") {
      if (!text && extra.optional) { options[key] = null; continue; }
      if (!text || [...text].length > extra.max) {
        return { problem: `${label}: 1 to ${extra.max} characters.`, input };
      }
      options[key] = text;
    } else options[key] = text;
  }
  return { options };
}

/** The options in words, as [term, description] pairs. */
export function describeOptions(o) {
  const undo = { off: "off", free: "free", penalty: `+${o.undo_penalty_s} s per undo` }[o.undo] ?? o.undo;
  const rows = [
    ["Seats", String(o.max_players)],
    ["Listed", o.public ? "public" : "private (share the link)"],
    ["Undo", undo],
    ["Wrap", o.wrap ? "King and Ace adjacent" : "off"],
    ["Waste", o.empty_waste ? "starts empty (24-card stock)" : "one card turned up"],
    ["Deal", o.difficulty === "any" ? "any winnable deal" : o.difficulty],
    ["Countdown", `${o.countdown_s} s`],
    ["Time limit", o.time_limit_s ? `${o.time_limit_s} s` : "none"],
    ["Spectators", o.allow_spectators ? (o.spectator_delay_s ? `allowed, ${o.spectator_delay_s} s behind` : "allowed") : "not allowed"],
  ];
  if (o.allow_spectators) {
    rows.push(["Boards", o.open_boards ? "open to spectators" : "a card shows once every racer has seen it"]);
  }
  if (o.practice_seed) rows.push(["Practice seed", o.practice_seed]);
  return rows;
}
