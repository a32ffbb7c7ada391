// /watch/CODE: join a room as a spectator over the JSON subprotocol and draw
// every player's board from the spectator frames. Boards are drawn only from
// spectator_board frames (the player's own view, with faces a racer still racing
// has not seen sent as "??" and drawn face down), so no hidden card can reach the
// page; the full deal is used only after race_over has revealed it.

import { BoardView } from "./board.js";
import { cardShort } from "./cards.js";
import { el, formatMs, setChildren, showMessage } from "./dom.js";
import { Game } from "./engine.js";
import { byStanding, memberMark, PlayerPanel, standingResult } from "./panel.js";
import { showReveal, standingMark } from "./playresults.js";
import { Connection } from "./ws.js";

const $ = (id) => document.getElementById(id);
const ROOM_NOT_FOUND = 106;
const SPECTATORS_NOT_ALLOWED = 108;
const ALREADY_RACING = 117;
const FATAL_JOIN_ERRORS = new Set([ROOM_NOT_FOUND, SPECTATORS_NOT_ALLOWED, ALREADY_RACING]);

const PHASE_TEXT = { lobby: "lobby", countdown: "countdown", racing: "racing", finished: "race over" };

/** The room code from /watch/CODE, upper-cased. */
function roomCodeFromPath() {
  const match = /^\/watch\/([^/]+)\/?$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]).trim().toUpperCase() : "";
}

/** A race clock that runs on from the last server reading. */
class RaceClock {
  constructor(node) {
    this.node = node;
    this.base = 0;
    this.baseAt = performance.now();
    this.running = false;
    setInterval(() => this.render(), 100);
  }
  set(elapsedMs, running) {
    this.base = elapsedMs;
    this.baseAt = performance.now();
    this.running = running;
    this.render();
  }
  /** A server reading: jump forward at once, back only for a real disagreement. */
  anchor(elapsedMs) {
    const drift = elapsedMs - this.now();
    if (drift > 0 || drift < -250) this.set(elapsedMs, true);
  }
  now() {
    return this.base + (this.running ? performance.now() - this.baseAt : 0);
  }
  stop(atMs = null) {
    this.set(atMs ?? this.now(), false);
  }
  render() {
    this.node.textContent = formatMs(this.now());
  }
}

class Watcher {
  constructor(code) {
    this.code = code;
    this.panels = new Map();
    /** Each member's mark (ghost, bot, guest) by player id, from the room states. */
    this.marks = new Map();
    this.raceId = null;
    this.phase = null;
    this.over = null;
    this.solution = null;
    this.countdownTimer = null;
    this.clock = new RaceClock($("clock"));
    this.connection = new Connection("web spectator", {
      onOpen: (conn) => conn.send({ t: "join", code: this.code, role: "spectator" }),
      onMessage: (message) => this.handle(message),
      onStatus: (text, kind) => showMessage($("message"), text, kind),
    });
    // One spectator_update per moment instead of a progress and a frame per board.
    const plainHello = this.connection.helloMessage.bind(this.connection);
    this.connection.helloMessage = () => ({ ...plainHello(), spectator_update: true });
    $("winning-line").addEventListener("click", () => this.showSolution());
  }

  start() {
    $("room-code").textContent = this.code;
    this.connection.start();
  }

  handle(message) {
    const handler = {
      room_state: () => this.roomState(message),
      countdown: () => this.countdown(message),
      race_start: () => this.raceStart(message),
      resync: () => this.resync(message),
      progress: () => this.progress(message),
      spectator_board: () => this.spectatorBoard(message),
      spectator_update: () => this.spectatorUpdate(message),
      finish: () => this.finish(message),
      race_over: () => this.raceOver(message),
      error: () => this.error(message),
      left: () => this.left(message),
      closing: () => showMessage($("message"), `The server is closing the connection: ${message.reason}.`, "error"),
    }[message.t];
    if (handler) handler();
  }

  // ---- room -----------------------------------------------------------
  roomState(state) {
    showMessage($("message"), "");
    const name = state.options?.name ?? "TriPeaks race";
    $("room-title").textContent = name;
    document.title = `${name} (${state.code}) · TriPeaks Race`;
    $("spectators").textContent = String(state.spectators);
    this.delayS = state.options?.spectator_delay_s ?? 0;
    $("delay-note").hidden = !this.delayS;
    $("delay").textContent = `${this.delayS} s`;
    const limit = state.options?.time_limit_s ?? 0;
    $("limit-note").hidden = !limit;
    $("limit").textContent = formatMs(limit * 1000).replace(/\.0$/, "");
    // Room states come at once, the race frames after the spectator delay: with
    // a delay, the race frames alone move the page into the next race.
    if (!this.delayS || state.phase === "lobby") {
      if (state.race_id && state.race_id !== this.raceId && state.phase !== "lobby") {
        this.raceStart({ race_id: state.race_id }, false);
      }
      if (state.phase !== "racing" || this.phase !== "finished") this.setPhase(state.phase);
    }
    const ids = new Set(state.members.map((member) => member.player_id));
    if (state.phase === "lobby") {
      for (const id of [...this.panels.keys()]) if (!ids.has(id)) this.panels.delete(id);
    }
    for (const member of state.members) {
      this.marks.set(member.player_id, memberMark(member));
      this.panelFor(member.player_id, member.name).setMark(memberMark(member));
    }
    this.layoutPanels();
  }

  setPhase(phase) {
    this.phase = phase;
    const badge = $("room-phase");
    badge.dataset.state = phase;
    badge.textContent = PHASE_TEXT[phase] ?? phase;
    if (phase === "lobby") {
      this.clock.set(0, false);
      for (const panel of this.panels.values()) panel.setStatus("waiting");
    }
    if (phase !== "countdown") this.hideCountdown();
  }

  /** The panel of a player, made on first sight; a name given renames it. */
  panelFor(playerId, name) {
    let panel = this.panels.get(playerId);
    if (!panel) {
      panel = new PlayerPanel(playerId, name ?? playerId);
      this.panels.set(playerId, panel);
    } else if (name !== undefined) {
      panel.rename(name);
    }
    return panel;
  }

  /**
   * Show the panels in standing order (panel.js byStanding). Nodes move only when
   * the order changed, and a panel that had the focus keeps it.
   */
  layoutPanels() {
    const holder = $("boards");
    const wanted = byStanding([...this.panels.values()], this.over !== null).map((p) => p.root);
    const shown = [...holder.children];
    if (wanted.length !== shown.length || wanted.some((node, i) => node !== shown[i])) {
      const focused = document.activeElement;
      setChildren(holder, wanted);
      if (focused && focused !== document.activeElement && focused.isConnected) {
        focused.focus({ preventScroll: true });
      }
    }
    $("no-players").hidden = this.panels.size > 0;
  }

  // ---- race -----------------------------------------------------------
  countdown(message) {
    this.setPhase("countdown");
    // A frame replayed to a late joiner is older than it looks: measure from the
    // server's clock when it is known, shifted by the spectator delay.
    const serverNow = this.connection.serverNow();
    const left = serverNow === null
      ? message.start_at_ms - message.server_time_ms
      : message.start_at_ms + (this.delayS ?? 0) * 1000 - serverNow;
    const endsAt = performance.now() + Math.max(0, Math.min(left, message.seconds * 1000));
    const node = $("countdown");
    clearInterval(this.countdownTimer);
    const tick = () => {
      const left = Math.ceil((endsAt - performance.now()) / 1000);
      if (left <= 0) { this.hideCountdown(); return; }
      node.hidden = false;
      node.textContent = String(left);
    };
    tick();
    this.countdownTimer = setInterval(tick, 100);
  }

  hideCountdown() {
    clearInterval(this.countdownTimer);
    $("countdown").hidden = true;
  }

  /**
   * A new race: forget the last one's results and boards. The race_start
   * frame carries the opening view, which every player starts from.
   */
  raceStart(message, fromFeed = true) {
    if (message.race_id !== this.raceId) {
      this.raceId = message.race_id;
      this.over = null;
      setChildren($("finish-order"), []);
      $("no-finish").hidden = false;
      $("no-finish").textContent = "Nobody has finished yet.";
      $("results").hidden = true;
      $("solution").hidden = true;
      this.stopSolution();
      const members = [...this.panels.values()];
      this.panels.clear();
      for (const old of members) this.panelFor(old.playerId, old.name).setStatus("racing");
      this.layoutPanels();
      this.clock.set(0, false);
    }
    this.hideCountdown();
    this.setPhase("racing");
    if (!fromFeed) return;
    if (!this.clock.running) this.clock.set(0, true);
    if (message.view) {
      for (const panel of this.panels.values()) {
        if (!panel.seenBoard) panel.setBoard(message.view);
      }
    }
  }

  resync(message) {
    if (message.race_id && message.phase !== "lobby") this.raceStart(message, false);
    if (message.phase) this.setPhase(message.phase);
    if (message.phase === "racing") this.clock.set(message.elapsed_ms, true);
  }

  progress(message) {
    if (this.over) return;
    if (this.phase !== "racing") this.setPhase("racing");
    if (!this.clock.running) this.clock.set(message.elapsed_ms, true);
    this.clock.anchor(message.elapsed_ms);
    for (const line of message.players) {
      const panel = this.panelFor(line.player_id);
      panel.setConnected(line.connected);
      // An older line than the panel shows (fewer moves and undos) changes nothing.
      if (!panel.takesCounts(line.moves, line.undos)) continue;
      // The line's time: the race clock, or when the player finished or stopped.
      panel.setProgress({ ...line, at_ms: message.elapsed_ms });
    }
    this.layoutPanels();
  }

  spectatorUpdate(message) {
    if (message.progress) this.progress(message.progress);
    for (const board of message.boards) this.spectatorBoard(board);
  }

  panelsShown(playerId) {
    return this.panels.get(playerId)?.root.isConnected;
  }

  spectatorBoard(message) {
    const panel = this.panelFor(message.player_id);
    if (!this.over) this.clock.anchor(message.elapsed_ms);
    // A board older than the panel's counts (a catch-up replaying an old frame)
    // would draw the past: keep what is shown.
    if (!panel.takesCounts(message.view.moves, message.view.undos)) return;
    panel.seenBoard = true;
    panel.setBoard(message.view);
    panel.setProgress({
      cleared: message.view.board.filter((entry) => entry === null).length,
      moves: message.view.moves,
      undos: message.view.undos,
      at_ms: message.elapsed_ms,
    });
    this.layoutPanels();
  }

  finish(message) {
    const panel = this.panelFor(message.player_id, message.name);
    panel.setRank(message.rank);
    panel.setProgress({ status: "finished", finish_ms: message.time_ms });
    this.layoutPanels();
    $("no-finish").hidden = true;
    const item = el("li", { "data-player": message.player_id, value: message.rank },
      [el("strong", {}, message.name), ` ${formatMs(message.time_ms)}`,
        el("span", { class: "muted" }, ` · ${message.moves} moves`)]);
    $("finish-order").append(item);
  }

  raceOver(message) {
    this.over = message;
    this.raceId = message.race_id;
    this.setPhase("finished");
    const longest = Math.max(0, ...message.standings.map((s) => s.time_ms));
    this.clock.stop(Math.max(this.clock.now(), longest));
    const rows = message.standings.map((s) => {
      this.finalCounts(this.panelFor(s.player_id, s.name), s);
      return el("tr", { "data-player": s.player_id, "data-rank": s.rank }, [
        el("td", {}, String(s.rank)),
        el("th", { scope: "row" }, [s.name, standingMark(s, this.marks)]),
        el("td", {}, standingResult(s.status, s.time_ms)),
        el("td", {}, String(s.cleared)),
        el("td", {}, String(s.moves)),
      ]);
    });
    setChildren($("standings").tBodies[0], rows);
    this.layoutPanels();
    if (!message.standings.some((s) => s.status === "finished")) {
      $("no-finish").textContent = "Nobody finished this race.";
    }
    $("results-heading").textContent = message.practice
      ? "Race over · practice seed" : "Race over";
    $("race-link").href = `/races/${encodeURIComponent(message.race_id)}`;
    $("results").hidden = false;
    $("commit-check").dataset.ok = "";
    $("commit-check").textContent = "checking…";
    showReveal(message, message.commitment);
  }

  /**
   * race_over's standings are the last word on every player's counts: the last
   * progress may not have been sent (docs/protocol.md, the progress bound) or a
   * frame may have been missed, and the panels must agree with the table.
   */
  finalCounts(panel, standing) {
    panel.setRank(standing.rank);
    panel.takesCounts(standing.moves, standing.undos);
    panel.setProgress({
      cleared: standing.cleared,
      moves: standing.moves,
      undos: standing.undos,
      status: standing.status,
      finish_ms: standing.status === "finished" ? standing.time_ms : undefined,
    });
  }

  error(message) {
    if (FATAL_JOIN_ERRORS.has(message.code)) {
      this.connection.stop();
      const text = {
        [ROOM_NOT_FOUND]: `There is no room with code ${this.code}. Check the code.`,
        [SPECTATORS_NOT_ALLOWED]: `Room ${this.code} does not allow spectators.`,
        [ALREADY_RACING]: `You are racing in room ${this.code}, so you cannot watch it.`,
      }[message.code];
      showMessage($("message"), text, "error");
      $("message").append(" ", el("a", { href: "/" }, "See the public rooms."));
      $("room-title").textContent = message.code === ROOM_NOT_FOUND ? "No such room" : "Cannot watch";
      document.body.classList.add("unavailable");
      $("watch").hidden = true;
      return;
    }
    showMessage($("message"), `The server says: ${message.message} (error ${message.code}).`, "error");
  }

  left(message) {
    this.connection.stop();
    const why = message.reason === "room_closed" ? "The room has closed." : "You have left the room.";
    showMessage($("message"), why, "info");
  }

  // ---- the winning line ----------------------------------------------
  showSolution() {
    if (!this.over) return;
    const { deal, solution, wrap, empty_waste: emptyWaste } = this.over;
    const game = new Game({ ...deal, wrap, empty_waste: emptyWaste });
    const views = [game.view()];
    const captions = ["The deal as dealt"];
    for (const move of solution) {
      const card = game.push(move);
      views.push(game.view());
      captions.push(move === "draw" ? `Draw ${cardShort(card)}` : `Play ${cardShort(card)}`);
    }
    const board = new BoardView("Winning line");
    setChildren($("solution-board"), [board.root]);
    this.stopSolution();
    this.solution = { board, views, captions, step: 0, timer: null };
    const slider = $("solution-slider");
    slider.max = String(views.length - 1);
    slider.oninput = () => { this.pauseSolution(); this.solutionStep(Number(slider.value)); };
    $("solution-play").onclick = () => (this.solution.timer ? this.pauseSolution() : this.playSolution());
    $("solution-back").onclick = () => { this.pauseSolution(); this.solutionStep(this.solution.step - 1); };
    $("solution-forward").onclick = () => { this.pauseSolution(); this.solutionStep(this.solution.step + 1); };
    $("solution").hidden = false;
    this.solutionStep(0);
    $("solution").scrollIntoView({ block: "nearest" });
    this.playSolution();
  }

  solutionStep(step) {
    const s = this.solution;
    s.step = Math.max(0, Math.min(s.views.length - 1, step));
    s.board.update(s.views[s.step]);
    $("solution-slider").value = String(s.step);
    $("solution-step").textContent = `${s.step} / ${s.views.length - 1}`;
    $("solution-caption").textContent = s.captions[s.step];
  }

  playSolution() {
    const s = this.solution;
    if (s.step >= s.views.length - 1) this.solutionStep(0);
    $("solution-play").textContent = "❚❚ Pause";
    s.timer = setInterval(() => {
      if (s.step >= s.views.length - 1) { this.pauseSolution(); return; }
      this.solutionStep(s.step + 1);
    }, 450);
  }

  pauseSolution() {
    if (!this.solution) return;
    clearInterval(this.solution.timer);
    this.solution.timer = null;
    $("solution-play").textContent = "▶ Play";
  }

  stopSolution() {
    this.pauseSolution();
    this.solution = null;
  }
}

const code = roomCodeFromPath();
if (!code) {
  showMessage($("message"), "No room code in the address: use /watch/CODE.", "error");
} else {
  new Watcher(code).start();
}
