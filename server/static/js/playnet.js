// The player's sockets: a Connection (js/ws.js: reconnects with growing
// pauses and says so) whose hello comes from the PlaySession, so that it
// carries the reconnect token; and the one-shot socket the front page uses
// to open a room before it sends the host to /play/CODE.

import { CLOSE_TEXT, Connection, SUBPROTOCOL, socketUrl } from "./ws.js";
import { optionsRefusal } from "./options.js";
import { PlaySession, State } from "./playsession.js";
import { saveToken } from "./seats.js";

// The protocol says not to come back after these: another tab holds the seat,
// the server does not speak our version, or it closed us for abuse.
const FINAL_CLOSES = new Set([4000, 4003, 4005, 1008]);

export class PlayConnection extends Connection {
  /** handlers as for Connection, plus onFinal(text) for a close not to retry. */
  constructor(session, handlers) {
    super(session.name, handlers);
    this.session = session;
  }

  helloMessage() {
    return this.session.hello();
  }

  follow(moved) {
    // The seat or room is on another node: say hello there with the same token.
    if ([State.HELLO_SENT, State.READY].includes(this.session.state)) this.session.connectionLost();
    super.follow(moved);
  }

  closed(socket, event) {
    if (socket !== this.socket) return;
    if ([State.HELLO_SENT, State.READY].includes(this.session.state)) this.session.connectionLost();
    if (FINAL_CLOSES.has(event.code) && !this.stopped) {
      this.stopped = true;
      clearInterval(this.pingTimer);
      this.socket = null;
      const why = event.code === 4003
        ? "this seat was opened in another tab or window; carry on there"
        : CLOSE_TEXT[event.code] ?? `the connection closed (code ${event.code})`;
      this.handlers.onFinal?.(why);
      return;
    }
    super.closed(socket, event);
  }
}

/**
 * Open a room with `options` as player `name`; resolves to its code once the
 * seat's token is saved, so /play/CODE resumes the seat as host.
 */
export function createRoom(name, options, url = socketUrl()) {
  return new Promise((resolve, reject) => {
    const session = new PlaySession(name);
    let socket;
    try {
      socket = new WebSocket(url, [SUBPROTOCOL]);
    } catch (error) {
      reject(new Error(`cannot open a connection: ${error.message}`));
      return;
    }
    const fail = (text) => { socket.close(); reject(new Error(text)); };
    const timer = setTimeout(() => fail("the server did not answer in time"), 15000);
    socket.addEventListener("open", () => socket.send(JSON.stringify(session.hello())));
    socket.addEventListener("error", () => fail("the server cannot be reached"));
    socket.addEventListener("message", (event) => {
      let message;
      try { message = JSON.parse(event.data); } catch { return; }
      const [got] = session.receive(message);
      if (got.type === "hello_refused") fail(got.error.message);
      else if (message.t === "welcome") {
        socket.send(JSON.stringify(session.send({ t: "create_room", options })));
      } else if (message.t === "error") fail(optionsRefusal(message));
      else if (message.t === "room_state") {
        clearTimeout(timer);
        saveToken(message.code, session.token);
        // Closing keeps the seat for the server's reconnect grace: the play page resumes it.
        socket.close(1000, "opening the room's page");
        resolve(message.code);
      }
    });
  });
}
