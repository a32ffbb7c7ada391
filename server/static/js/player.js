// /players/NAME: a claimed player's figures, rating chart (SVG, drawn here) and
// recent races with links to their replays and to race the player's run of each
// (as a ghost), from GET /api/players/NAME.

import { formatMs, el, setChildren, showMessage } from "./dom.js";
import { raceThisRunHref } from "./ghostlink.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 180;
const PAD = 32;

/** The name from /players/NAME. */
function nameFromPath() {
  const match = /^\/players\/([^/]+)\/?$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]) : "";
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

/** The rating after each rated race as a line chart; the start (1000) is the first point. */
export function ratingChart(history) {
  const values = [1000, ...history.map((point) => point.rating)];
  const low = Math.min(...values);
  const high = Math.max(...values);
  const span = Math.max(1, high - low);
  const x = (i) => PAD + (values.length === 1 ? 0 : (i * (WIDTH - 2 * PAD)) / (values.length - 1));
  const y = (v) => HEIGHT - PAD - ((v - low) * (HEIGHT - 2 * PAD)) / span;
  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "rating-chart",
    "aria-label": `Rating over ${history.length} rated races, from 1000 to ${values.at(-1)}`,
  });
  chart.append(svg("line", { x1: PAD, y1: HEIGHT - PAD, x2: WIDTH - PAD, y2: HEIGHT - PAD,
    stroke: "currentColor", "stroke-opacity": 0.3 }));
  chart.append(svg("text", { x: 2, y: y(high) + 4, "font-size": 11, fill: "currentColor" }, high));
  chart.append(svg("text", { x: 2, y: y(low) + 4, "font-size": 11, fill: "currentColor" }, low));
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  chart.append(svg("polyline", { points, fill: "none", stroke: "currentColor", "stroke-width": 2 }));
  values.forEach((v, i) => {
    const dot = svg("circle", { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 3, fill: "currentColor" });
    dot.append(svg("title", {}, i === 0 ? "start: 1000" : `after race ${i}: ${v}`));
    chart.append(dot);
  });
  return chart;
}

function recentRow(race, account) {
  const me = race.players.find((p) => p.account === account);
  const when = new Date(race.started_at_ms).toLocaleString();
  const rank = me ? `${me.rank} of ${race.players.length}` : "–";
  return el("tr", {}, [
    el("td", { text: when }),
    el("td", { text: race.room_name }),
    el("td", { text: rank }),
    el("td", { text: me ? me.status : "–" }),
    el("td", { text: me && me.finish_ms !== null ? formatMs(me.finish_ms) : "–" }),
    el("td", {}, [el("a", { href: `/races/${encodeURIComponent(race.race_id)}`, text: "replay" }),
      ...(me ? [" · ", el("a", { href: raceThisRunHref(race.race_id, me.player_id),
        class: "race-run", text: "race this run" })] : [])]),
  ]);
}

function percent(share) {
  return share === null ? "–" : `${Math.round(share * 100)}%`;
}

function show(profile) {
  document.title = `${profile.name} · TriPeaks Race`;
  $("player-name").textContent = profile.name;
  $("rating").textContent = profile.rating.rating;
  $("rated-races").textContent = profile.rating.rated_races;
  $("races").textContent = profile.races;
  $("wins").textContent = profile.wins;
  $("finish-rate").textContent = percent(profile.finish_rate);
  $("best").textContent = formatMs(profile.best_finish_ms);
  $("median").textContent = formatMs(profile.median_finish_ms);
  setChildren($("chart"), [ratingChart(profile.rating_history)]);
  const rows = profile.recent_races.map((race) => recentRow(race, profile.account));
  setChildren($("recent").querySelector("tbody"), rows);
  $("profile").hidden = false;
}

async function main() {
  const name = nameFromPath();
  try {
    const response = await fetch(`/api/players/${encodeURIComponent(name)}`);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    show(body);
  } catch (error) {
    showMessage($("message"), `No profile to show: ${error.message}`, "error");
  }
}

main();
