// A player's side of the protocol without a socket: the browser's copy of
// protocol/wire/session.py (ClientSession), rule for rule. It numbers moves,
// keeps the ones not yet answered, resends them after a reconnect under the
// numbers the server's resync leaves them, and keeps the reconnect token.
// Messages go in and out as plain objects; the page's socket turns them into
// JSON text frames. tests/server/web/test_play_session.py runs the same
// scripts through this class and the Python one and compares every frame.

import { PROTOCOL_VERSION } from "./ws.js";

export const State = Object.freeze({
  NEW: "new",
  HELLO_SENT: "hello_sent",
  READY: "ready",
  DISCONNECTED: "disconnected",
  CLOSED: "closed",
});

const LIVE = [State.HELLO_SENT, State.READY, State.DISCONNECTED];

/** A session method called in a state where it means nothing (a bug in the page). */
export class SessionMisuse extends Error {}

/** The words of docs/rules.md for each refusal reason code. */
export const REASON_TEXT = Object.freeze({
  1: "that card is still covered",
  2: "that card is not one rank above or below the waste card",
  3: "that card has already been played",
  4: "the stock is empty",
  5: "there is nothing to undo",
  6: "the game is over",
  7: "there is no such position (0 to 27)",
  8: "undo is switched off in this race",
});

export class PlaySession {
  constructor(name, { token = null, client = "web", key = null } = {}) {
    this.name = name;
    this.client = client;
    this.key = key; // a claimed name's secret key (docs/players.md), sent in every hello
    this.token = token; // replaced by each welcome
    this.state = State.NEW;
    this.welcome = null;
    this.nextSeq = 1;
    this.inFlight = []; // {seq, action, position}, oldest first
  }

  guard(method, allowed) {
    if (!allowed.includes(this.state)) {
      throw new SessionMisuse(`${method}() cannot be called in state ${this.state}`);
    }
  }

  // ---- the connection ------------------------------------------------------
  /** The hello that opens a connection, with the reconnect token if there is one. */
  hello() {
    this.guard("hello", [State.NEW, State.DISCONNECTED]);
    this.state = State.HELLO_SENT;
    return { t: "hello", name: this.name, version: PROTOCOL_VERSION, token: this.token,
      bot: false, client: this.client, key: this.key };
  }

  /** The socket is gone: moves stay in flight until the next resync. */
  connectionLost() {
    this.guard("connectionLost", LIVE);
    this.state = State.DISCONNECTED;
  }

  close() {
    this.state = State.CLOSED;
  }

  // ---- sending ---------------------------------------------------------------
  /** Any message but a move (moves go through move(), which numbers them). */
  send(message) {
    this.guard("send", [State.READY]);
    if (message.t === "move") throw new SessionMisuse("send() does not take moves: move() numbers them");
    return message;
  }

  /** Number a new move and keep it in flight; allowed while disconnected too. */
  move(action, position = null) {
    this.guard("move", LIVE);
    const request = { seq: this.nextSeq, action, position };
    this.nextSeq += 1;
    this.inFlight.push(request);
    return { seq: request.seq, frame: frameOf(request) };
  }

  /** Move `seq`, still in flight, again under its number (after RATE_LIMITED). */
  resend(seq) {
    this.guard("resend", [State.READY]);
    const request = this.inFlight.find((r) => r.seq === seq);
    if (!request) throw new SessionMisuse(`resend(): move ${seq} is not in flight`);
    return frameOf(request);
  }

  /** Move `seq` was refused unhandled: drop it and the later ones; reuse the number. */
  refused(seq) {
    this.guard("refused", LIVE);
    if (this.inFlight.some((r) => r.seq === seq)) {
      this.inFlight = this.inFlight.filter((r) => r.seq < seq);
      this.nextSeq = seq;
    }
  }

  /** The frames to send after a resync: moves past `lastSeq` again, numbered on from it. */
  resendAfterResync(lastSeq) {
    this.guard("resendAfterResync", [State.READY]);
    const kept = this.inFlight.filter((r) => r.seq > lastSeq);
    this.inFlight = kept.map((r, n) => ({ ...r, seq: lastSeq + n + 1 }));
    this.nextSeq = lastSeq + 1 + kept.length;
    return this.inFlight.map(frameOf);
  }

  /** Forget every move in flight and number on from `nextSeq` (a new race, a new seat). */
  restartMoves(nextSeq = 1) {
    this.guard("restartMoves", LIVE);
    this.inFlight = [];
    this.nextSeq = nextSeq;
  }

  // ---- receiving ------------------------------------------------------------
  /**
   * The events one decoded server message brings: {type: "message", message},
   * {type: "answered", result, move} for the first answer to a move in flight,
   * or {type: "hello_refused", error}.
   */
  receive(message) {
    this.guard("receive", [State.HELLO_SENT, State.READY]);
    if (this.state === State.HELLO_SENT) return [this.beforeWelcome(message)];
    return [this.onMessage(message)];
  }

  beforeWelcome(message) {
    if (message.t === "welcome") {
      this.state = State.READY;
      this.welcome = message;
      this.token = message.token;
      if (!message.resumed) this.restartMoves(); // a new seat: the old moves belong to nobody
    } else if (message.t === "error") {
      this.state = State.DISCONNECTED;
      return { type: "hello_refused", error: message };
    }
    return { type: "message", message };
  }

  onMessage(message) {
    if (message.t === "move_result") return this.answer(message);
    if (message.t === "race_start") this.restartMoves(); // every race numbers its moves from 1
    return { type: "message", message };
  }

  answer(result) {
    const index = this.inFlight.findIndex((r) => r.seq === result.seq);
    if (index < 0) return { type: "message", message: result };
    // Answers come in order: anything older was answered on a lost socket.
    const [move] = this.inFlight.splice(0, index + 1).slice(-1);
    return { type: "answered", result, move };
  }
}

function frameOf(request) {
  return { t: "move", seq: request.seq, action: request.action, position: request.position };
}
