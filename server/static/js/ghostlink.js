// Ghost races from the browser: "race this run" links open the front page with
// ?ghost=RACE_ID:PLAYER_ID (up to three, all of one deal); the front page's
// "Create a room" then names those runs in the room's options (RoomOptions.ghosts).

const MAX_GHOSTS = 3;
const ID = /^[0-9A-Za-z_-]{1,64}$/;

/** The link that opens a room racing player `playerId`'s run of race `raceId`. */
export function raceThisRunHref(raceId, playerId) {
  return `/?ghost=${encodeURIComponent(`${raceId}:${playerId}`)}`;
}

/** The runs the page's address names: [{race_id, player_id}], well-formed ones only. */
export function ghostsFromQuery(search = location.search) {
  const found = [];
  for (const value of new URLSearchParams(search).getAll("ghost")) {
    const [raceId, playerId, ...rest] = value.split(":");
    if (rest.length === 0 && ID.test(raceId ?? "") && /^[\x21-\x7e]{1,40}$/.test(playerId ?? "")) {
      found.push({ race_id: raceId, player_id: playerId });
    }
  }
  return found.slice(0, MAX_GHOSTS);
}
