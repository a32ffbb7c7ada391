// /play/CODE: the player's page. Asks a name once, takes a seat in the room
// (or resumes it with the token kept for this room), and shows the lobby, the
// countdown, the race on the player's own board with everyone's standing, and
// the results with the seed checks and a rematch. Moves go through the
// PlaySession, which numbers them and resends the unanswered ones after a
// reconnect; the board is drawn only from the player's own view.

import { cardName, isCardCode } from "./cards.js";
import { el, formatMs, showMessage } from "./dom.js";
import { applyResult, blankView, PlayBoard, POSITION_OF_KEY, refusalOf } from "./playboard.js";
import { optionsRefusal } from "./options.js";
import { Lobby } from "./playlobby.js";
import { NamePanel } from "./playname.js";
import { PlayConnection } from "./playnet.js";
import { memberMark } from "./panel.js";
import { showResults, resultSentence, WinningLine } from "./playresults.js";
import { PlaySession, REASON_TEXT, State } from "./playsession.js";
import { LiveStandings, RaceClock, overFromRecord } from "./playrace.js";
import { forgetToken, savedKey, savedName, savedToken, saveToken } from "./seats.js";

const $ = (id) => document.getElementById(id);
const Err = Object.freeze({
  NOT_ALLOWED_NOW: 102, ALREADY_IN_ROOM: 104, ROOM_NOT_FOUND: 106, ROOM_FULL: 107,
  SEQ_OUT_OF_ORDER: 113, RATE_LIMITED: 114, KICKED: 118,
});
const PHASE_TEXT = { lobby: "lobby", countdown: "countdown", racing: "racing", finished: "race over" };
const CODE_PATTERN = /^[A-Z0-9]{1,16}$/;
const RESUME_WAIT_MS = 2000;
const RATE_LIMIT_BACKOFF_MS = 500;

function roomCodeFromPath() {
  const match = /^\/play\/([^/]+)\/?$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]).trim().toUpperCase() : "";
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

class Player {
  constructor(code) {
    this.code = code;
    this.session = null;
    this.conn = null;
    this.me = null;
    this.room = null;
    this.phase = null;
    this.view = blankView();
    this.rules = { wrap: true, undo: true };
    this.raceId = null;
    this.commitment = null;
    this.over = null;
    this.myStatus = null; // "racing" while this page's player races
    this.penaltyMs = 0;
    this.syncing = false;
    this.dropped = false;
    this.renaming = null; // the new name while the page leaves the room to take it
    this.names = new NamePanel((name, changing) => (changing ? this.rename(name) : this.connect(name)));
    this.clock = new RaceClock($("clock"));
    this.standings = new LiveStandings($("live-standings"));
    this.board = new PlayBoard({
      onPlay: (position) => this.move("play", position),
      onDraw: () => this.move("draw"),
    });
    $("board-holder").append(this.board.root);
    this.winningLine = new WinningLine();
    this.lobby = new Lobby(code, {
      ready: (ready) => this.send({ t: "ready", ready }),
      start: () => this.start(),
      kick: (playerId) => this.send({ t: "kick", player_id: playerId }),
      leave: () => this.leave(),
      saveOptions: (options) => this.send({ t: "update_options", options }),
    });
    this.wireControls();
  }

  wireControls() {
    $("undo").addEventListener("click", () => this.move("undo"));
    $("resign").addEventListener("click", () => this.resign());
    $("rematch").addEventListener("click", () => {
      if (this.send({ t: "rematch" })) $("rematch").setAttribute("aria-pressed", "true");
    });
    $("winning-line").addEventListener("click", () => this.over && this.winningLine.show(this.over));
    document.addEventListener("keydown", (event) => this.key(event));
    document.addEventListener("keyup", (event) => {
      if (event.key === " " && this.keysLive(event)) event.preventDefault();
    });
    $("change-name").addEventListener("click", () => this.changeName());
  }

  begin() {
    $("room-code").textContent = this.code;
    const name = savedName();
    if (name) this.connect(name);
    else this.askName();
  }

  askName(problem = "") {
    $("room-title").textContent = `Join room ${this.code}`;
    this.names.ask(problem);
  }

  connect(name) {
    this.session = new PlaySession(name, { token: savedToken(this.code), key: savedKey(name) });
    const conn = new PlayConnection(this.session, {
      onOpen: (_conn, welcome) => this.welcomed(welcome),
      // A socket given up (a change of name) may still deliver: only the current one counts.
      onMessage: (message) => conn === this.conn && this.receive(message),
      onStatus: (text, kind) => conn === this.conn && this.connectionStatus(text, kind),
      onFinal: (why) => conn === this.conn && this.unavailable(`Disconnected: ${why}.`, "Disconnected"),
    });
    this.conn = conn;
    conn.start();
  }

  /** "Change name": the page's name is offered for a new one. */
  changeName() {
    const others = (this.room?.members ?? []).filter((m) => m.player_id !== this.me);
    const host = this.room?.host_id === this.me && others.length > 0;
    this.names.change(this.session.name, "Taking a new name leaves the room and joins it again"
      + (host ? `: ${others[0].name} becomes the host.` : "."));
  }

  /** Leave the room and take the seat again under `name` (the hello carries the name). */
  rename(name) {
    if (name === this.session.name) return;
    if (this.phase !== "lobby" && this.phase !== "finished") {
      this.say("The race has started: change your name once it is over.");
      return;
    }
    this.renaming = name;
    if (!this.send({ t: "leave" })) {
      this.renaming = null;
      this.say("Not connected: the name stays until the page is connected again.");
    }
  }

  rejoinAs(name) {
    this.renaming = null;
    forgetToken(this.code);
    this.conn.stop();
    Object.assign(this, { room: null, phase: null, me: null, myStatus: null });
    this.say(`Joining again as ${name}.`);
    this.connect(name);
  }

  send(message) {
    if (!this.session || this.session.state !== State.READY) return false;
    return this.conn.send(this.session.send(message));
  }

  say(text) {
    // Re-setting the same words still has to be announced: clear first.
    $("say").textContent = "";
    requestAnimationFrame(() => { $("say").textContent = text; });
    $("say").dataset.text = text;
  }

  connectionStatus(text, kind) {
    if (kind === "error") this.dropped = true;
    if (kind === "error" || this.dropped) showMessage($("message"), text, kind);
  }

  // ---- the connection ----------------------------------------------------
  welcomed(welcome) {
    this.session.receive(welcome);
    this.me = welcome.player_id;
    if (this.dropped) {
      showMessage($("message"), "Reconnected: your seat and your moves are kept.", "ok");
      this.dropped = false;
    } else showMessage($("message"), "");
    clearTimeout(this.joinTimer);
    if (welcome.resumed) {
      // The server sends the room and the race at once; join only if it does not.
      this.joinTimer = setTimeout(() => this.join(), RESUME_WAIT_MS);
      return;
    }
    if (this.room) this.say("Your seat was given up while you were away; joining the room again.");
    this.join();
  }

  join() {
    this.send({ t: "join", code: this.code, role: "player" });
  }

  receive(message) {
    if (![State.HELLO_SENT, State.READY].includes(this.session.state)) return;
    for (const event of this.session.receive(message)) {
      if (event.type === "answered") this.answered(event.result);
      else if (event.type === "hello_refused") this.helloRefused(event.error);
      else this.handle(event.message);
    }
  }

  handle(message) {
    const handler = {
      room_state: () => this.roomState(message),
      countdown: () => this.countdown(message),
      race_start: () => this.raceStart(message),
      resync: () => this.resync(message),
      progress: () => this.progress(message),
      finish: () => this.finish(message),
      race_over: () => this.raceOver(message),
      error: () => this.error(message),
      left: () => this.left(message),
      closing: () => showMessage($("message"), `The server is closing the connection: ${message.reason}.`, "error"),
    }[message.t];
    if (handler) handler();
  }

  helloRefused(error) {
    this.conn.stop();
    if (error.ref === "hello" && /name/i.test(error.message)) {
      this.askName(`The server refused that name: ${error.message}.`);
    } else this.unavailable(`The server refused to connect: ${error.message}.`, "Cannot join");
  }

  /** Give up on this room: say why, with the way on. */
  unavailable(text, title, watchLink = false) {
    this.conn?.stop();
    clearTimeout(this.joinTimer);
    showMessage($("message"), text, "error");
    if (watchLink) {
      $("message").append(" ", el("a", { href: `/watch/${encodeURIComponent(this.code)}` }, "Watch it live"), ",");
    }
    $("message").append(" ", el("a", { href: "/" }, "see the public rooms"), ".");
    $("room-title").textContent = title;
    document.body.classList.add("unavailable");
    for (const id of ["lobby", "race", "name-panel"]) $(id).hidden = true;
  }

  // ---- the room --------------------------------------------------------------
  roomState(state) {
    if (state.code !== this.code) return;
    clearTimeout(this.joinTimer);
    saveToken(this.code, this.session.token);
    const before = this.phase;
    this.room = state;
    const name = state.options.name;
    $("room-title").textContent = name;
    document.title = `${name} (${state.code}) · Play · TriPeaks Race`;
    this.rules.undo = state.options.undo !== "off";
    this.standings.undoPenaltyMs = state.options.undo === "penalty" ? state.options.undo_penalty_s * 1000 : 0;
    // Who left before a race starts is not in it: a bot that left at the last race's end.
    this.standings.members(state.members, this.me, state.phase === "lobby" || state.phase === "countdown");
    this.lobby.update(state, this.me);
    if (state.phase === "countdown" && before !== "countdown") this.resetRace();
    if (state.phase !== "finished") $("rematch").setAttribute("aria-pressed", "false");
    const between = state.phase === "lobby" || state.phase === "finished";
    $("change-name").hidden = !between;
    if (!between && this.names.changing) this.names.close(); // a race is no time to leave
    this.setPhase(state.phase);
    this.rematchNote();
  }

  setPhase(phase) {
    this.phase = phase;
    const badge = $("room-phase");
    badge.dataset.state = phase;
    badge.textContent = PHASE_TEXT[phase] ?? phase;
    $("lobby").hidden = !(phase === "lobby" || phase === "finished");
    const racer = this.myStatus !== null;
    $("race").hidden = !(phase === "countdown" || (racer && (phase === "racing" || phase === "finished")));
    $("results").hidden = !(phase === "finished" && this.over);
    if (phase === "lobby") this.clock.set(0, false);
    if (phase !== "countdown") this.hideCountdown();
    this.drawBoard();
  }

  rematchNote() {
    const state = this.room;
    if (!state || state.phase !== "finished") return;
    const waiting = state.members.filter((m) => !m.ready).map((m) => m.name);
    const away = state.members.filter((m) => !m.ready && !m.connected).map((m) => m.name);
    let note = waiting.length === state.members.length ? ""
      : waiting.length ? `Rematch when ${waiting.join(", ")} ${waiting.length === 1 ? "asks" : "ask"} too.`
        : "Everyone asked: dealing…";
    // Someone gone keeps a seat for the reconnect grace: only the host can free it sooner.
    if (away.length && state.host_id === this.me) {
      note += ` ${away.join(", ")} ${away.length === 1 ? "is" : "are"} offline: kick to race without them.`;
    }
    $("rematch-note").textContent = note.trim();
  }

  async start() {
    if (this.room && this.room.members.length === 1) {
      const yes = await this.confirm({
        title: "Race on your own?",
        text: "Nobody else has joined yet. Share the play link first, or start a solo race now.",
        yes: "Start alone", no: "Wait for friends",
      });
      if (!yes) return;
    }
    this.send({ t: "start" });
  }

  async leave() {
    if (this.phase === "racing" && this.myStatus === "racing") {
      const yes = await this.confirm({ title: "Leave the race?", text: "Leaving counts as giving up this race.", yes: "Leave", no: "Stay" });
      if (!yes) return;
    }
    this.send({ t: "leave" });
  }

  left(message) {
    if (this.renaming && message.reason === "left") { this.rejoinAs(this.renaming); return; }
    forgetToken(this.code);
    const text = {
      kicked: "The host removed you from the room: you can join again once its next race has started.",
      room_closed: "The room has closed.",
    }[message.reason] ?? "You have left the room.";
    this.unavailable(text, "Not in the room");
    $("message").dataset.kind = "info";
  }

  /** A modal question; resolves true for yes.
   *
   * The dialog's close event comes a task after it closes: asked again before it came
   * (a key right after an answer), the earlier question is answered here, from the
   * dialog as it closed, and its close event, when it comes, is not this one's answer. */
  confirm({ title, text, yes, no }) {
    const dialog = $("confirm");
    this.answerConfirm?.();
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-yes").textContent = yes;
    $("confirm-no").textContent = no;
    dialog.returnValue = "";
    dialog.showModal();
    $("confirm-no").focus(); // the safe answer has the focus
    return new Promise((resolve) => {
      const answer = () => {
        if (dialog.open) return; // the close event of an earlier showing
        dialog.removeEventListener("close", answer);
        if (this.answerConfirm === answer) this.answerConfirm = null;
        resolve(dialog.returnValue === "yes");
      };
      this.answerConfirm = answer;
      dialog.addEventListener("close", answer);
    });
  }

  // ---- the race -----------------------------------------------------------------
  resetRace() {
    this.over = null;
    this.view = blankView();
    this.myStatus = "racing";
    this.penaltyMs = 0;
    this.raceId = null;
    this.winningLine.hide();
    $("results").hidden = true;
    this.standings.reset();
    this.clock.set(0, false);
    this.showPenalty();
  }

  countdown(message) {
    this.setPhase("countdown");
    const serverNow = this.conn.serverNow();
    const left = serverNow === null ? message.start_at_ms - message.server_time_ms
      : message.start_at_ms - serverNow;
    const endsAt = performance.now() + Math.max(0, Math.min(left, message.seconds * 1000));
    clearInterval(this.countdownTimer);
    const tick = () => {
      const seconds = Math.ceil((endsAt - performance.now()) / 1000);
      if (seconds <= 0) { this.hideCountdown(); return; }
      $("countdown").hidden = false;
      $("countdown").textContent = String(seconds);
    };
    tick();
    this.countdownTimer = setInterval(tick, 100);
  }

  hideCountdown() {
    clearInterval(this.countdownTimer);
    $("countdown").hidden = true;
  }

  raceStart(message) {
    if (message.race_id !== this.raceId && this.myStatus === null) this.resetRace();
    this.raceId = message.race_id;
    this.commitment = message.commitment;
    this.rules.wrap = message.wrap;
    this.view = message.view;
    this.myStatus = "racing";
    this.clock.set(Math.max(0, message.server_time_ms - message.started_at_ms), true);
    this.setPhase("racing");
    this.say("Go! Play a card one rank above or below the waste card, or draw.");
  }

  resync(message) {
    this.syncing = false;
    if (message.race_id && message.race_id !== this.raceId && message.phase !== "lobby") {
      this.resetRace();
      this.raceId = message.race_id;
    }
    this.commitment = message.commitment ?? this.commitment;
    if (message.view) {
      this.view = message.view;
      this.penaltyMs = message.penalty_ms;
      if (this.myStatus === null) this.myStatus = "racing";
      this.showPenalty();
    } else if (message.phase !== "lobby" && message.phase !== "countdown") this.myStatus = null;
    if (message.phase === "racing") this.clock.set(message.elapsed_ms, true);
    if (message.phase === "finished") {
      this.clock.stop(message.elapsed_ms);
      if (!this.over && message.race_id) this.fetchStoredRace(message.race_id);
    }
    // Moves sent before the drop and not in the server's view go again, numbered on.
    for (const frame of this.session.resendAfterResync(message.last_seq)) this.conn.send(frame);
    this.setPhase(message.phase);
  }

  async fetchStoredRace(raceId) {
    try {
      const response = await fetch(`/api/races/${encodeURIComponent(raceId)}`, { cache: "no-store" });
      if (response.ok && !this.over) this.raceOver(overFromRecord(await response.json()), false);
    } catch {
      // The results stay hidden; the stored race link in the rooms list still has them.
    }
  }

  racing() {
    return this.phase === "racing" && this.myStatus === "racing";
  }

  drawBoard() {
    this.board.update(this.view, { wrap: this.rules.wrap, live: this.racing() });
    const v = this.view;
    $("own-counts").textContent = v.stock_left === null ? ""
      : `${v.board.filter((e) => e === null).length} / 28 cleared · ${v.moves} moves · ${v.undos} undo${v.undos === 1 ? "" : "s"}`;
    const live = this.racing();
    $("undo").disabled = !live; // with undo off it stays pressable: the refusal says why
    $("undo").title = this.rules.undo ? "" : "Undo is switched off in this room";
    $("resign").disabled = !live;
  }

  move(action, position = null) {
    if (!this.racing()) {
      this.say(this.phase === "countdown" ? "Wait for the start." : "The race is not running for you.");
      return;
    }
    // With nothing in flight the page knows the board exactly and can explain at once;
    // otherwise the server judges the move after the ones before it.
    if (this.session.inFlight.length === 0) {
      const reason = refusalOf(this.view, { action, position }, this.rules);
      if (reason !== null) { this.refused(reason, position); return; }
    }
    const { frame } = this.session.move(action, position);
    this.conn.send(frame); // while disconnected it stays in flight and goes after the resync
  }

  refused(reason, position) {
    const words = REASON_TEXT[reason] ?? `the move was refused (reason ${reason})`;
    const entry = Number.isInteger(position) ? this.view.board[position] : undefined;
    this.say(isCardCode(entry) ? `${cardName(entry)}: ${words}.` : `${capitalised(words)}.`);
  }

  answered(result) {
    this.clock.anchor(result.elapsed_ms);
    if (!result.accepted) {
      this.refused(result.reason, result.position);
      return;
    }
    const before = this.penaltyMs;
    this.view = applyResult(this.view, result);
    this.penaltyMs = result.penalty_ms;
    this.showPenalty();
    if (result.status === "won") this.say("You cleared all 28 cards!");
    else if (result.status === "stuck") {
      this.say(this.rules.undo ? "Stuck: the stock is empty and no card fits. Undo, or resign."
        : "Stuck: the stock is empty and no card fits.");
    } else if (result.penalty_ms > before) {
      this.say(`Undone: +${Math.round((result.penalty_ms - before) / 1000)} s penalty.`);
    }
    this.drawBoard();
  }

  showPenalty() {
    $("penalty-note").hidden = this.penaltyMs === 0;
    $("penalty").textContent = `+${Math.round(this.penaltyMs / 1000)} s`;
  }

  async resign() {
    if (!this.racing()) return;
    const yes = await this.confirm({
      title: "Resign this race?", text: "You keep your place by cards cleared, but cannot play on.",
      yes: "Yes, resign", no: "Keep racing",
    });
    if (yes && this.racing() && this.send({ t: "resign" })) {
      this.myStatus = "resigned";
      this.say("You resigned.");
      this.drawBoard();
    }
  }

  progress(message) {
    if (this.phase === "racing") this.clock.anchor(message.elapsed_ms);
    for (const line of message.players) {
      if (line.player_id === this.me && line.status !== "racing" && this.myStatus === "racing") {
        this.myStatus = line.status;
        this.drawBoard();
      }
    }
    this.standings.progress(message);
  }

  finish(message) {
    this.standings.finish(message);
    if (message.player_id === this.me) {
      this.myStatus = "finished";
      this.say(`You finished #${message.rank} in ${formatMs(message.time_ms)}.`);
      this.drawBoard();
    } else this.say(`${message.name} finished #${message.rank} in ${formatMs(message.time_ms)}.`);
  }

  raceOver(message, live = true) {
    this.over = message;
    this.raceId = message.race_id;
    if (this.myStatus === "racing") this.myStatus = "done";
    const longest = Math.max(0, ...message.standings.map((s) => s.time_ms));
    this.clock.stop(Math.max(this.clock.now(), longest));
    this.standings.over(message);
    const marks = new Map((this.room?.members ?? []).map((m) => [m.player_id, memberMark(m)]));
    showResults(message, this.me, this.commitment, marks);
    this.say(resultSentence(message, this.me));
    if (live) this.setPhase("finished");
    else this.setPhase(this.phase);
    this.rematchNote();
  }

  error(message) {
    if (message.ref === "join") { this.joinRefused(message); return; }
    if (message.ref === "update_options") {
      $("host-options").open = true;
      showMessage($("options-error"), `The server refused the options: ${optionsRefusal(message)}.`, "error");
      return;
    }
    if (message.seq !== null && message.seq !== undefined) { this.moveError(message); return; }
    this.say(`The server says: ${message.message}.`);
  }

  joinRefused(message) {
    const code = this.code;
    if (message.code === Err.ALREADY_IN_ROOM) { this.send({ t: "sync" }); return; }
    forgetToken(code);
    if (message.code === Err.ROOM_NOT_FOUND) {
      this.unavailable(`There is no room with code ${code}. Check the code with whoever sent it.`, "No such room");
    } else if (message.code === Err.ROOM_FULL) {
      this.unavailable(`Room ${code} is full: every seat is taken.`, "Room full", true);
    } else if (message.code === Err.KICKED) {
      this.unavailable(`The host removed you from room ${code}: you can join again once its next race has started.`, "Removed from the room", true);
    } else if (message.code === Err.NOT_ALLOWED_NOW) {
      this.unavailable(`The race in room ${code} has already started: join it when it is over (reload this page then).`, "Race under way", true);
    } else this.unavailable(`Cannot join room ${code}: ${message.message}.`, "Cannot join");
  }

  moveError(message) {
    const seq = message.seq;
    if (message.code === Err.RATE_LIMITED && this.session.inFlight.some((r) => r.seq === seq)) {
      setTimeout(() => {
        if (this.session.state === State.READY && this.session.inFlight.some((r) => r.seq === seq)) {
          this.conn.send(this.session.resend(seq));
        }
      }, RATE_LIMIT_BACKOFF_MS);
      return;
    }
    if (this.phase === "racing" && !this.syncing) {
      // The move was not handled, so neither were the ones after it: ask where we stand.
      this.syncing = true;
      this.send({ t: "sync" });
      return;
    }
    this.session.refused(seq);
    this.say(`The server refused the move: ${message.message}.`);
  }

  // ---- keys -------------------------------------------------------------------------
  keysLive(event) {
    if (this.phase !== "racing" || $("confirm").open) return false;
    if (event.ctrlKey || event.metaKey || event.altKey) return false;
    return !event.target.closest?.("input, textarea, select");
  }

  key(event) {
    if (!this.keysLive(event)) return;
    const key = event.key.toLowerCase();
    const act = {
      " ": () => this.move("draw"),
      u: () => this.move("undo"),
      r: () => this.resign(),
    }[key] ?? (key in POSITION_OF_KEY ? () => this.move("play", POSITION_OF_KEY[key]) : null);
    if (!act) return;
    event.preventDefault(); // space must not also press the focused button
    if (!event.repeat) act(); // a held key plays once
  }
}

const code = roomCodeFromPath();
if (!CODE_PATTERN.test(code)) {
  showMessage($("message"), "No room code in the address: use /play/CODE.", "error");
} else {
  new Player(code).begin();
}
