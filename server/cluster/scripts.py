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

#: KEYS: the lease set; ARGV: lease end (unix ms), then codes.  Notes when each lease ends,
#: for the janitor (:data:`ORPHANS`).
LEASES: Final = """
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
end
return #ARGV - 1
"""

#: KEYS: the lease set; ARGV: now (unix ms), the key prefix, the most to return.  Codes
#: whose lease ran out and whose input log is still there (a room to take over); codes
#: without a log are forgotten.
ORPHANS: Final = """
local out = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 50)
for _, code in ipairs(due) do
  local base = ARGV[2] .. 'room:' .. code
  if redis.call('EXISTS', base .. ':owner') == 0 then
    if redis.call('EXISTS', base .. ':log') == 1 and #out < tonumber(ARGV[3]) then
      out[#out + 1] = code
    elseif redis.call('EXISTS', base .. ':log') == 0 then
      redis.call('ZREM', KEYS[1], code)
    end
  end
end
return out
"""

#: ARGV: the key prefix, then one JSON array of runs, each ``[code, expected owner value,
#: epoch, first index, [data, ...]]`` (the entries of one room at consecutive indices).
#: Appends the entries of every run whose room is still held as expected to the room's
#: stream (an index already there is skipped); returns the codes of the others (fenced
#: out: nothing of them is written), each once.  One argument for the whole commit: the
#: node's client packs each argument in Python (with three per entry, ``make
#: bench-cluster`` saw 31,000 moves a second in cluster mode; with one, 37,600).
APPEND: Final = """
local p = ARGV[1]
local runs = cjson.decode(ARGV[2])
local fenced = {}
local told = {}
for r = 1, #runs do
  local code, want, epoch, first, data = runs[r][1], runs[r][2], runs[r][3], runs[r][4], runs[r][5]
  if redis.call('GET', p .. 'room:' .. code .. ':owner') == want then
    local key = p .. 'room:' .. code .. ':log'
    -- A retried append (its answer was lost) writes each index once.
    local last = -1
    local tail = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
    if #tail > 0 then
      local fields = tail[1][2]
      for f = 1, #fields, 2 do
        if fields[f] == 'i' then last = tonumber(fields[f + 1]) end
      end
    end
    local e = string.format('%d', epoch)
    for j = 1, #data do
      local index = first + j - 1
      if index > last then
        redis.call('XADD', key, '*', 'i', string.format('%d', index), 'e', e, 'd', data[j])
      end
    end
    redis.call('SADD', p .. 'logs', code)
  elseif not told[code] then
    told[code] = true
    fenced[#fenced + 1] = code
  end
end
return fenced
"""

#: ARGV: the key prefix, then (code, owner value) pairs.  Deletes each room's log unless
#: another node holds the room now.
DROP_LOGS: Final = """
local p = ARGV[1]
for i = 2, #ARGV, 2 do
  local code, want = ARGV[i], ARGV[i + 1]
  local now = redis.call('GET', p .. 'room:' .. code .. ':owner')
  if (not now) or now == want then
    redis.call('DEL', p .. 'room:' .. code .. ':log')
    redis.call('SREM', p .. 'logs', code)
  end
end
return 1
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

#: KEYS: owner, epoch, log of one room; ARGV: node id, lease ms.  Takes a room whose lease ran
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
redis.call('PERSIST', KEYS[3])
return {epoch, value}
"""

#: KEYS: the lease set, a room's log; ARGV: the code, how long its log stays (ms).  An
#: orphan left for its members to come back to: the janitor looks no more, and the log
#: goes once no seat in it can be reclaimed.
LEAVE_ORPHAN: Final = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
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
