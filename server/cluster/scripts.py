"""The Lua scripts the nodes run in Redis: each one is atomic, so a claim, a renewal or a
takeover cannot interleave with another node's.

Keys are passed as ``KEYS`` where the caller knows them; the listing and the
look-ups derive a node's keys from its id inside the script (one Redis, not a
Redis Cluster, so every key is on the one server).
"""

from __future__ import annotations

from typing import Final

#: KEYS: owner, epoch pairs; ARGV: node id, lease ms.  Claims each free code: its epoch
#: (raised by one), or 0 when another node holds it.
CLAIM: Final = """
local out = {}
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    out[#out + 1] = 0
  else
    local epoch = redis.call('INCR', KEYS[i + 1])
    redis.call('PEXPIRE', KEYS[i + 1], 86400000)
    redis.call('SET', KEYS[i], ARGV[1] .. ':' .. epoch, 'PX', ARGV[2])
    out[#out + 1] = epoch
  end
end
return out
"""

#: KEYS: owner, epoch pairs; ARGV: lease ms, then each pair's expected owner value.
#: Extends each lease still held; takes back one whose key is gone while nobody raised
#: the epoch (Redis restarted, or the lease ran out with no takeover); returns the
#: 1-based numbers of the pairs another node holds now (fenced out).
RENEW: Final = """
local lost = {}
for i = 1, #KEYS / 2 do
  local owner, epoch, want = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  local now = redis.call('GET', owner)
  if now == want then
    redis.call('PEXPIRE', owner, ARGV[1])
  else
    local mine = string.match(want, ':(%d+)$')
    local counter = redis.call('GET', epoch)
    if (not now) and ((not counter) or counter == mine) then
      redis.call('SET', epoch, mine, 'PX', 86400000)
      redis.call('SET', owner, want, 'PX', ARGV[1])
    else
      lost[#lost + 1] = i
    end
  end
end
return lost
"""

#: KEYS: owner keys; ARGV: the expected values.  Frees each code still held as expected.
RELEASE: Final = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    redis.call('DEL', KEYS[i])
  end
end
return #KEYS
"""

#: KEYS: owner, epoch of one room; ARGV: node id, lease ms.  Takes a room whose lease ran
#: out: ``{epoch, value}``; or ``{0, value}`` when a live owner holds it.
TAKEOVER: Final = """
local now = redis.call('GET', KEYS[1])
if now then
  return {0, now}
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
local value = ARGV[1] .. ':' .. epoch
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return {epoch, value}
"""

#: KEYS: the node set; ARGV: the cut-off (unix ms), the key prefix.  Forgets nodes silent
#: since the cut-off and returns every listing of the others.
LISTING: Final = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
local out = {}
for _, node in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  for _, value in ipairs(redis.call('HVALS', ARGV[2] .. 'node:' .. node .. ':rooms')) do
    out[#out + 1] = value
  end
end
return out
"""

#: KEYS: a session key; ARGV: the key prefix.  ``{code, owner value, owner URL}`` of the
#: session's room (false where missing), or ``{}`` for an unknown session.
LOCATE_SESSION: Final = """
local code = redis.call('GET', KEYS[1])
if not code then
  return {}
end
local owner = redis.call('GET', ARGV[1] .. 'room:' .. code .. ':owner')
if not owner then
  return {code, false, false}
end
local node = string.match(owner, '^(.*):%d+$')
return {code, owner, redis.call('GET', ARGV[1] .. 'node:' .. node)}
"""

#: KEYS: a room's owner key; ARGV: the key prefix.  ``{owner value, owner URL}`` (the URL
#: false when the node is gone), or ``{}`` when no node holds the code.
LOCATE_ROOM: Final = """
local owner = redis.call('GET', KEYS[1])
if not owner then
  return {}
end
local node = string.match(owner, '^(.*):%d+$')
return {owner, redis.call('GET', ARGV[1] .. 'node:' .. node)}
"""
