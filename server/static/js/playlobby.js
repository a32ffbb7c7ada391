// The lobby on the player's page: the members with their ready flags, the
// room's options (the host may change them), links to share, and the
// buttons this member may use now: Ready, Start race (host), Kick (host).

import { el, setChildren, showMessage } from "./dom.js";
import { buildOptionsFields, describeOptions, readOptions } from "./options.js";

const $ = (id) => document.getElementById(id);

export class Lobby {
  /** actions: {ready(bool), start(), kick(id, name), leave(), saveOptions(options)}. */
  constructor(code, actions) {
    this.actions = actions;
    this.state = null;
    this.me = null;
    this.formFor = null; // the options the host's form was last filled with
    const base = `${location.protocol}//${location.host}`;
    $("play-link").value = `${base}/play/${encodeURIComponent(code)}`;
    $("watch-link").value = `${base}/watch/${encodeURIComponent(code)}`;
    $("copy-play").addEventListener("click", () => copyLink($("play-link"), "Play link copied."));
    $("copy-watch").addEventListener("click", () => copyLink($("watch-link"), "Watch link copied."));
    $("ready").addEventListener("click", () => actions.ready($("ready").getAttribute("aria-pressed") !== "true"));
    $("start").addEventListener("click", () => actions.start());
    $("leave").addEventListener("click", () => actions.leave());
    $("options-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const read = readOptions($("options-fields"));
      if (read.problem) {
        showMessage($("options-error"), read.problem, "error");
        read.input.focus();
        return;
      }
      showMessage($("options-error"), "");
      // The form has no field for the runs raced as ghosts: they stay as they were.
      const ghosts = this.state?.options?.ghosts ?? [];
      actions.saveOptions(ghosts.length ? { ...read.options, ghosts } : read.options);
    });
  }

  get isHost() {
    return this.state !== null && this.state.host_id === this.me;
  }

  /** Draw a room_state; `me` is this page's player id. */
  update(state, me) {
    this.state = state;
    this.me = me;
    const phase = state.phase;
    $("lobby-heading").textContent = phase === "finished" ? "Players · rematch" : "Lobby";
    setChildren($("members").tBodies[0], state.members.map((member) => this.row(member)));
    const entries = describeOptions(state.options).flatMap(([term, text]) =>
      [el("dt", {}, term), el("dd", {}, text)]);
    setChildren($("options-list"), entries);
    const mine = state.members.find((member) => member.player_id === me);
    $("ready").hidden = phase !== "lobby" || this.isHost;
    $("ready").setAttribute("aria-pressed", String(Boolean(mine?.ready)));
    $("ready").textContent = "Ready";
    $("ready").classList.toggle("pressed", Boolean(mine?.ready));
    $("start").hidden = phase !== "lobby" || !this.isHost;
    $("lobby-hint").textContent = this.hint(state);
    const editable = this.isHost && (phase === "lobby" || phase === "finished");
    $("host-options").hidden = !editable;
    if (editable && JSON.stringify(state.options) !== this.formFor) {
      this.formFor = JSON.stringify(state.options);
      buildOptionsFields($("options-fields"), state.options, "room");
    }
  }

  row(member) {
    const tags = [];
    if (member.player_id === this.state.host_id) tags.push("host");
    if (member.ghost) tags.push("ghost");
    else if (member.bot) tags.push("bot");
    else if (member.guest) tags.push("guest");
    if (member.player_id === this.me) tags.push("you");
    const finished = this.state.phase === "finished";
    let status;
    if (!member.connected) status = "offline";
    else if (finished) status = member.ready ? "wants a rematch" : "—";
    else if (member.player_id === this.state.host_id) status = "hosting";
    else status = member.ready ? "ready" : "not ready";
    const kick = this.isHost && member.player_id !== this.me
      && (this.state.phase === "lobby" || finished)
      ? el("button", { type: "button", class: "small", "aria-label": `Kick ${member.name}`,
        onclick: () => this.actions.kick(member.player_id, member.name) }, "Kick")
      : null;
    return el("tr", { "data-player": member.player_id, "data-ready": String(member.ready) }, [
      el("th", { scope: "row" }, [member.name,
        tags.length ? el("span", { class: "muted" }, ` (${tags.join(", ")})`) : null]),
      el("td", {}, el("span", { class: "ready-flag", "data-ready": String(member.ready && member.connected) }, status)),
      el("td", {}, kick),
    ]);
  }

  hint(state) {
    if (state.phase !== "lobby") return "";
    const waiting = state.members.filter((m) => m.player_id !== state.host_id && !m.ready);
    const alone = state.members.length === 1;
    if (this.isHost) {
      if (alone) return "Share the link to play with friends, or start a solo race.";
      if (waiting.length) return `Waiting for ${waiting.map((m) => m.name).join(", ")} to be ready.`;
      return "Everyone is ready: start the race.";
    }
    const host = state.members.find((m) => m.player_id === state.host_id);
    return `Press Ready; ${host ? host.name : "the host"} starts the race.`;
  }
}

async function copyLink(input, done) {
  let copied = false;
  try {
    await navigator.clipboard.writeText(input.value);
    copied = true;
  } catch {
    input.select(); // no clipboard here (not a secure context): leave it selected to copy by hand
    copied = document.execCommand?.("copy") ?? false;
  }
  showMessage($("message"), copied ? done : "Copy the selected link by hand.", copied ? "ok" : "info");
}
