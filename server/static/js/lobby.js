// The front page: "Create a room" (opens it over the socket, then sends the
// host to /play/CODE), "Join" by code, public rooms from GET /api/rooms,
// polled every two seconds, and a box that opens /watch/CODE.

import { el, formatMs, setChildren, showMessage } from "./dom.js";
import { buildOptionsFields, readOptions } from "./options.js";
import { ghostsFromQuery } from "./ghostlink.js";
import { createRoom } from "./playnet.js";
import { nameProblem, saveName, savedName } from "./seats.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 2000;
const RACES_EVERY = 5; // refresh the recent races on every fifth room poll
const PHASE_TEXT = { lobby: "lobby", countdown: "countdown", racing: "racing", finished: "race over" };
const CODE_PATTERN = /^[A-Za-z0-9]{1,16}$/;

/** Read one room from the API, whatever optional fields it leaves out. */
export function normaliseRoom(room) {
  const options = room.options ?? {};
  const players = Array.isArray(room.players) ? room.players.length : room.players;
  return {
    code: String(room.code),
    name: room.name ?? options.name ?? "",
    players: Number.isFinite(players) ? players : 0,
    maxPlayers: room.max_players ?? options.max_players ?? null,
    spectators: room.spectators ?? 0,
    phase: room.phase ?? room.state ?? "lobby",
    allowSpectators: (room.allow_spectators ?? options.allow_spectators) !== false,
  };
}

function roomRow(room) {
  const watchable = room.allowSpectators;
  const joinable = (room.phase === "lobby" || room.phase === "finished")
    && (room.maxPlayers === null || room.players < room.maxPlayers);
  const join = joinable
    ? el("a", { class: "button", href: `/play/${encodeURIComponent(room.code)}`,
      "aria-label": `Join room ${room.code}${room.name ? `, ${room.name}` : ""}` }, "Join")
    : null;
  return el("tr", { "data-code": room.code }, [
    el("td", { class: "code" }, watchable
      ? el("a", { href: `/watch/${encodeURIComponent(room.code)}` }, room.code)
      : room.code),
    el("td", {}, room.name),
    el("td", {}, room.maxPlayers ? `${room.players} / ${room.maxPlayers}` : String(room.players)),
    el("td", { class: "optional" }, String(room.spectators)),
    el("td", {}, el("span", { class: "state-badge", "data-state": room.phase },
      PHASE_TEXT[room.phase] ?? room.phase)),
    el("td", { class: "optional row-actions" }, [join, watchable
      ? el("a", { class: "button", href: `/watch/${encodeURIComponent(room.code)}`,
        "aria-label": `Watch room ${room.code}${room.name ? `, ${room.name}` : ""}` }, "Watch")
      : el("span", { class: "muted" }, "no spectators")]),
  ]);
}

async function refresh() {
  try {
    const response = await fetch("/api/rooms", { cache: "no-store" });
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    const data = await response.json();
    const rooms = (Array.isArray(data) ? data : data.rooms ?? []).map(normaliseRoom);
    // Replacing rows would move keyboard focus off a Watch link: keep focus where it was.
    const focused = document.activeElement?.closest?.("tr[data-code]")?.dataset.code;
    setChildren($("rooms").tBodies[0], rooms.map(roomRow));
    if (focused) $("rooms").querySelector(`tr[data-code="${CSS.escape(focused)}"] a`)?.focus();
    $("no-rooms").hidden = rooms.length > 0;
    $("rooms").hidden = rooms.length === 0;
    $("rooms-status").textContent = `${rooms.length} public room${rooms.length === 1 ? "" : "s"} · updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    $("rooms-status").textContent = `Could not load the rooms: ${error.message}. Retrying…`;
  }
}

function raceItem(race) {
  const winner = race.players.find((p) => p.rank === 1);
  const started = new Date(race.started_at_ms).toLocaleString();
  let summary = "";
  if (winner && winner.status === "finished") {
    summary = `won by ${winner.name} in ${formatMs(winner.finish_ms)}`;
  } else if (winner) {
    summary = `nobody cleared the board; ${winner.name} ranked first`;
  }
  return el("li", { "data-race": race.race_id }, [
    el("a", { href: `/races/${encodeURIComponent(race.race_id)}` },
      `${race.room_name}${race.practice ? " (practice)" : ""}`),
    el("span", { class: "muted" },
      ` · ${started} · ${race.players.length} player${race.players.length === 1 ? "" : "s"}` +
      `${summary ? ` · ${summary}` : ""}`),
  ]);
}

async function refreshRaces() {
  try {
    const response = await fetch("/api/races?limit=10", { cache: "no-store" });
    if (!response.ok) return;
    const races = (await response.json()).races ?? [];
    setChildren($("races"), races.map(raceItem));
    $("no-races").hidden = races.length > 0;
  } catch {
    // The rooms line already reports a server that cannot be reached.
  }
}

$("code-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const code = $("room-code").value.trim().toUpperCase();
  if (!CODE_PATTERN.test(code)) {
    showMessage($("code-error"), "A room code is 1 to 16 letters and digits, like ABC234.", "error");
    $("room-code").setAttribute("aria-invalid", "true");
    $("room-code").focus();
    return;
  }
  location.assign(`/watch/${encodeURIComponent(code)}`);
});

$("join-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const code = $("join-code").value.trim().toUpperCase();
  if (!CODE_PATTERN.test(code)) {
    showMessage($("join-error"), "A room code is 1 to 16 letters and digits, like ABC234.", "error");
    $("join-code").setAttribute("aria-invalid", "true");
    $("join-code").focus();
    return;
  }
  location.assign(`/play/${encodeURIComponent(code)}`);
});

buildOptionsFields($("create-options"), undefined, "create");
// A "race this run" link: the room races those stored runs as ghosts (on their deal).
const ghosts = ghostsFromQuery();
if (ghosts.length) {
  $("create-options").prepend(el("p", { class: "message", "data-kind": "info", id: "ghost-note" },
    `You will race ${ghosts.length === 1 ? "a stored run" : `${ghosts.length} stored runs`} as `
    + "ghosts, on their deal and rules: a practice race."));
}
$("player-name").value = savedName();
$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("player-name").value.trim();
  const nameWrong = nameProblem(name);
  const read = nameWrong ? null : readOptions($("create-options"));
  const problem = nameWrong ?? read.problem;
  if (problem) {
    showMessage($("create-error"), problem, "error");
    (nameWrong ? $("player-name") : read.input).focus();
    return;
  }
  saveName(name);
  const button = $("create-form").querySelector("button[type=submit]");
  button.disabled = true;
  showMessage($("create-error"), "Opening the room…", "info");
  try {
    const code = await createRoom(name, ghosts.length ? { ...read.options, ghosts } : read.options);
    location.assign(`/play/${encodeURIComponent(code)}`);
  } catch (error) {
    showMessage($("create-error"), `Could not create the room: ${error.message}.`, "error");
    button.disabled = false;
  }
});

let polls = 0;
refresh();
refreshRaces();
setInterval(() => {
  refresh();
  polls += 1;
  if (polls % RACES_EVERY === 0) refreshRaces();
}, POLL_MS);
