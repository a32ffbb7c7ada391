// The race around the player's own board: the race clock and everyone's
// standing, sorted the way the race ranks (standing.js, docs/rules.md). The
// standing holds counts and times only, never a card.

import { el, formatMs, setChildren } from "./dom.js";
import { memberMark } from "./panel.js";
import { sortByStanding } from "./standing.js";

const STATUS_TEXT = { racing: "racing", finished: "finished", stuck: "stuck", resigned: "resigned",
  left: "left", timed_out: "out of time", waiting: "waiting" };

/** A race clock that runs on from the last server reading. */
export class RaceClock {
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
    if (!this.running) return;
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

const lineStanding = (line) => ({ finished: line.status === "finished", rank: line.rank,
  cleared: line.cleared, reachedAtMs: line.reachedAt, moves: line.moves });

export class LiveStandings {
  constructor(list) {
    this.list = list;
    this.lines = new Map();
    this.me = null;
    this.final = null; // race_over standings, once known
    this.undoPenaltyMs = 0; // the room's penalty per undo (0: undo free or off)
  }

  line(playerId, name = "?") {
    let line = this.lines.get(playerId);
    if (!line) {
      line = { playerId, name, bot: false, cleared: 0, moves: 0, undos: 0, penaltyMs: null, status: "waiting",
        timeMs: 0, rank: null, reachedAt: 0, connected: true, order: this.lines.size };
      this.lines.set(playerId, line);
    }
    return line;
  }

  /** The room's members: names, bots, who is still here; `prune` drops who left. */
  members(members, me, prune) {
    this.me = me;
    if (prune) {
      const ids = new Set(members.map((member) => member.player_id));
      for (const id of [...this.lines.keys()]) if (!ids.has(id)) this.lines.delete(id);
    }
    for (const member of members) {
      const line = this.line(member.player_id, member.name);
      line.name = member.name;
      line.bot = member.bot;
      line.mark = memberMark(member);
      line.connected = member.connected;
    }
    this.render();
  }

  /** A new race: everyone back to nothing cleared; who left before it is gone. */
  reset() {
    this.final = null;
    for (const line of this.lines.values()) {
      Object.assign(line, { cleared: 0, moves: 0, undos: 0, penaltyMs: null, status: "racing", timeMs: 0, rank: null, reachedAt: 0 });
    }
    this.render();
  }

  progress(message) {
    for (const p of message.players) {
      const line = this.line(p.player_id);
      if (p.cleared !== line.cleared) line.reachedAt = message.elapsed_ms;
      Object.assign(line, { cleared: p.cleared, moves: p.moves, undos: p.undos, status: p.status,
        connected: p.connected, timeMs: p.elapsed_ms });
    }
    this.render();
  }

  finish(message) {
    const line = this.line(message.player_id, message.name);
    Object.assign(line, { status: "finished", rank: message.rank, timeMs: message.time_ms, cleared: 28,
      moves: message.moves, undos: message.undos });
    this.render();
  }

  over(message) {
    this.final = message.standings;
    for (const s of message.standings) {
      const line = this.line(s.player_id, s.name);
      Object.assign(line, { status: s.status, rank: s.rank, timeMs: s.time_ms, cleared: s.cleared, moves: s.moves,
        undos: s.undos, penaltyMs: s.penalty_ms });
    }
    this.render();
  }

  sorted() {
    const lines = [...this.lines.values()];
    if (this.final) {
      const rank = new Map(this.final.map((s) => [s.player_id, s.rank]));
      return lines.filter((l) => rank.has(l.playerId)).sort((a, b) => rank.get(a.playerId) - rank.get(b.playerId));
    }
    return sortByStanding(lines.sort((a, b) => a.order - b.order), lineStanding);
  }

  /** "1 undo (+5 s)": a line's undos and, where undo costs time, what they added. */
  undoText(line) {
    const penalty = line.penaltyMs ?? line.undos * this.undoPenaltyMs;
    const undos = `${line.undos} undo${line.undos === 1 ? "" : "s"}`;
    return penalty > 0 ? `${undos} (+${Math.round(penalty / 1000)} s)` : undos;
  }

  render() {
    const items = this.sorted().map((line, index) => {
      let status = line.status === "finished" ? `finished ${formatMs(line.timeMs)}`
        : STATUS_TEXT[line.status] ?? line.status;
      if (line.undos > 0) status += ` · ${this.undoText(line)}`;
      const you = line.playerId === this.me;
      return el("li", { "data-player": line.playerId, class: you ? "me" : null }, [
        el("span", { class: "standing-rank" }, String(index + 1)),
        el("span", { class: "standing-name" }, [line.name, you ? " (you)" : null,
          line.mark ? el("span", { class: "muted", "data-mark": line.mark }, ` ${line.mark}`) : null,
          line.connected ? null : el("span", { class: "player-offline" }, "offline")]),
        el("progress", { class: "progress", max: 28, value: line.cleared, "aria-label": `${line.name}: cards cleared` }),
        el("span", { class: "standing-count" }, `${line.cleared}/28`),
        el("span", { class: "standing-status", "data-status": line.status }, status),
      ]);
    });
    setChildren(this.list, items);
  }
}

/** A stored race (GET /api/races/ID) in the shape of race_over, for a page that missed it. */
export function overFromRecord(race) {
  const status = (s) => (s === "timeout" ? "timed_out" : s);
  return {
    t: "race_over", race_id: race.race_id, ended_by: "all_done",
    standings: race.players.map((p) => ({
      player_id: p.player_id, name: p.name, bot: p.is_bot, rank: p.rank, status: status(p.status),
      time_ms: p.finish_ms ?? 0, cleared: p.cleared, moves: p.moves, undos: p.undos, penalty_ms: p.penalty_ms,
    })),
    seed: race.seed, candidate: race.candidate, wrap: race.wrap, empty_waste: race.empty_waste,
    practice: race.practice, commitment: race.commitment,
    deal: { peaks: race.peaks, waste: race.waste, stock: race.stock },
    solution: race.solution, par: race.par,
  };
}
