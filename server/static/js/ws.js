// The WebSocket connection on the JSON subprotocol (docs/protocol.md):
// hello, then whatever the page asks for; messages are dispatched by their
// "t" tag. A dropped connection is retried with growing pauses, and the page
// is told so it can show the state and join again. In a cluster, "moved"
// sends the connection to the node that holds the room: the page's onOpen
// then says again what it wanted (its join) there.

// Version 2, the server's latest; the pages come from the server they talk to.
export const SUBPROTOCOL = "tripeaks.v2.json";
export const PROTOCOL_VERSION = 2;
const PING_EVERY_MS = 15000;
export const RETRY_MS = [500, 1000, 2000, 4000, 8000];
// "moved" answers followed in a row before giving up (a loop of nodes is a bug).
const MAX_REDIRECTS = 3;

export const CLOSE_TEXT = {
  1000: "the connection was closed",
  1001: "the server is shutting down",
  1002: "the server reported a protocol error",
  1003: "the server refused a frame",
  1006: "the connection was lost",
  1008: "the server closed the connection for too many requests",
  1011: "the server had an internal error",
  1013: "the server is overloaded",
  4000: "the server does not speak this page's protocol version",
  4001: "the server did not hear a hello in time",
  4002: "the connection was idle for too long",
  4003: "this connection was replaced by a newer one",
  4004: "too many bad frames",
  4005: "the server does not offer the JSON subprotocol",
};

/** The ws:// or wss:// address of the server's /ws endpoint. */
export function socketUrl(loc = location) {
  return `${loc.protocol === "https:" ? "wss:" : "ws:"}//${loc.host}/ws`;
}

export class Connection {
  /**
   * handlers: {onOpen(conn, welcome), onMessage(msg), onStatus(text, kind)}.
   * onOpen runs after each welcome, so the page can (re)join its room.
   */
  constructor(name, handlers, url = socketUrl()) {
    this.name = name;
    this.handlers = handlers;
    this.url = url;
    this.homeUrl = url; // where to start again when the node at this.url is gone
    this.redirects = 0;
    this.socket = null;
    this.attempt = 0;
    this.stopped = false;
    this.pingTimer = null;
    this.retryTimer = null;
    this.clockOffsetMs = null; // server clock minus local clock, from ping/pong
  }

  /** The server's clock now (Unix ms), once a pong has been seen; else null. */
  serverNow() {
    return this.clockOffsetMs === null ? null : Date.now() + this.clockOffsetMs;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  /** Close for good: no more retries. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    if (this.socket) this.socket.close(1000, "page done");
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  open() {
    this.status(this.attempt ? "Reconnecting…" : "Connecting…", "info");
    let socket;
    try {
      socket = new WebSocket(this.url, [SUBPROTOCOL]);
    } catch (error) {
      this.status(`Cannot open a connection: ${error.message}`, "error");
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => this.send(this.helloMessage()));
    socket.addEventListener("message", (event) => this.receive(event.data));
    socket.addEventListener("close", (event) => this.closed(socket, event));
  }

  /** The hello that opens each connection (the player's page adds its token). */
  helloMessage() {
    return { t: "hello", name: this.name, version: PROTOCOL_VERSION, client: "web" };
  }

  receive(data) {
    if (typeof data !== "string") return; // JSON arrives in text frames only
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (!message || typeof message.t !== "string") return;
    if (message.t === "moved") {
      this.follow(message);
      return;
    }
    if (message.t === "room_state") this.redirects = 0;
    if (message.t === "welcome") {
      this.attempt = 0;
      clearInterval(this.pingTimer);
      const ping = () => this.send({ t: "ping", client_time_ms: Date.now() });
      ping();
      this.pingTimer = setInterval(ping, PING_EVERY_MS);
      this.handlers.onOpen?.(this, message);
      return;
    }
    if (message.t === "pong") {
      // The server read its clock about half a round trip before we got the answer.
      const now = Date.now();
      const halfTrip = Math.max(0, now - message.client_time_ms) / 2;
      this.clockOffsetMs = message.server_time_ms + halfTrip - now;
      return;
    }
    this.handlers.onMessage?.(message);
  }

  /** Go to the node a "moved" names (a ws:// URL, or a path on this address). */
  follow(moved) {
    this.redirects += 1;
    const old = this.socket;
    this.socket = null; // its close event is not a drop
    clearInterval(this.pingTimer);
    if (old) old.close(1000, "moved");
    if (this.redirects > MAX_REDIRECTS) {
      this.status("The servers sent this page from node to node too many times.", "error");
      return;
    }
    this.url = new URL(moved.url, this.url).href;
    this.open();
  }

  closed(socket, event) {
    if (socket !== this.socket) return;
    clearInterval(this.pingTimer);
    this.socket = null;
    if (this.stopped) return;
    this.url = this.homeUrl; // the node may be gone: any node finds the room again
    const why = CLOSE_TEXT[event.code] ?? `the connection closed (code ${event.code})`;
    if (event.code === 4000 || event.code === 4005) {
      this.status(`Cannot watch: ${why}.`, "error");
      return;
    }
    const wait = RETRY_MS[Math.min(this.attempt, RETRY_MS.length - 1)];
    this.attempt += 1;
    this.status(`Disconnected: ${why}. Trying again in ${Math.round(wait / 100) / 10} s…`, "error");
    this.retryTimer = setTimeout(() => this.open(), wait);
  }

  status(text, kind) {
    this.handlers.onStatus?.(text, kind);
  }
}
