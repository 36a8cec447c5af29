#pragma once

// The device inbox's Lua scripts: one per port operation, each atomic on Redis. Loaded with
// SCRIPT LOAD at connect and called with EVALSHA (NOSCRIPT: load again, retry once).
//
// Key layout (TBMQ's, so operators recognise it; `P` = the configured prefix):
//   P{clientId}_messages            ZSET   member = message key name, score = arrival sequence
//                                          (max score + 1: oldest first by score)
//   P{clientId}_messages_<packetId> STRING "<pubrel 0|1>|<expires_at_ms>|<record bytes>",
//                                          PXAT expires_at_ms (the message expires in Redis
//                                          even if no read ever comes)
//   P{clientId}_last_packet_id      STRING last packet id assigned (1..65535), no TTL
//   P{clientId}_log_positions       HASH   field = "<topic>/<partition>", value =
//                                          "<offset>:<timestamp_ms>" of the last entry taken
//                                          from that log (repeats are skipped), no TTL
// The {clientId} hash tag keeps a client's keys in one Redis Cluster slot. Message keys are
// derived inside the scripts from KEYS[1] (as TBMQ does): same slot by the hash tag.
//
// Expiry is judged against the broker's clock (ARGV now_ms), so the injected clock rules; the
// Redis TTL is the backstop that frees memory for inboxes nobody reads: the expiry plus one
// minute, so Redis never removes a message before the broker's clock says it expired (the
// clocks of the broker and Redis may disagree by that much).

#include <array>
#include <string_view>

namespace starling::adapters::redis {

enum class inbox_script { append = 0, read, remove, mark_pubrel, clear };
inline constexpr std::size_t inbox_script_count = 5;

// KEYS: messages, last_packet_id, log_positions. ARGV: now_ms, max_messages, then
// (expires_at_ms, log, offset, timestamp_ms, record) per entry. Returns {trimmed, id1, id2, ...}.
//   * an entry whose log position is at or before the one stored for its log (offset and
//     timestamp both) is a repeat: id 0, nothing stored (device_inbox.h, log_position);
//   * entries already expired (expires_at_ms <= now) get an id but are never stored;
//   * of the rest, only the newest max_messages are stored (the head of an oversized batch
//     gets ids and counts as trimmed); existing messages are trimmed oldest-first to make
//     room, and each one whose key still existed counts as trimmed;
//   * ids continue from last_packet_id, 65535 wraps to 1, and an id whose message key still
//     exists is skipped (MQTT forbids two in-flight messages with one id; TBMQ overwrote it);
//   * each log's position becomes its last new entry's "offset:timestamp".
inline constexpr std::string_view append_script = R"lua(
local index = KEYS[1]
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local n = (#ARGV - 2) / 5
if n == 0 then
  return {0}
end
local stored = {}
local newest = {}
local fresh = {}
for i = 1, n do
  local b = 2 + 5 * (i - 1)
  local log = ARGV[b + 2]
  fresh[i] = true
  if log ~= '' then
    if stored[log] == nil then
      stored[log] = false
      local v = redis.call('HGET', KEYS[3], log)
      if v then
        local o, t = string.match(v, '^(-?%d+):(-?%d+)$')
        if o then
          stored[log] = {tonumber(o), tonumber(t)}
        end
      end
    end
    local s = stored[log]
    if s and tonumber(ARGV[b + 3]) <= s[1] and tonumber(ARGV[b + 4]) <= s[2] then
      fresh[i] = false
    else
      newest[log] = ARGV[b + 3] .. ':' .. ARGV[b + 4]
    end
  end
end
local live = 0
for i = 1, n do
  if fresh[i] and tonumber(ARGV[3 + 5 * (i - 1)]) > now then
    live = live + 1
  end
end
local skip = 0
if live > limit then
  skip = live - limit
end
local trimmed = skip
local excess = redis.call('ZCARD', index) + (live - skip) - limit
if excess > 0 then
  local oldest = redis.call('ZRANGE', index, 0, excess - 1)
  for _, key in ipairs(oldest) do
    trimmed = trimmed + redis.call('DEL', key)
    redis.call('ZREM', index, key)
  end
end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local score = 0
local top = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
if top[2] then
  score = tonumber(top[2])
end
local out = {trimmed}
local seen = 0
for i = 1, n do
  if not fresh[i] then
    out[#out + 1] = 0
  else
    local id = last
    local tries = 0
    repeat
      id = id % 65535 + 1
      tries = tries + 1
      if tries > 65535 then
        return redis.error_reply('no free packet id')
      end
    until redis.call('EXISTS', index .. '_' .. id) == 0
    last = id
    local b = 2 + 5 * (i - 1)
    local expires = ARGV[b + 1]
    if tonumber(expires) > now then
      seen = seen + 1
      if seen > skip then
        local key = index .. '_' .. id
        score = score + 1
        redis.call('SET', key, '0|' .. expires .. '|' .. ARGV[b + 5], 'PXAT',
                   string.format('%.0f', tonumber(expires) + 60000))
        redis.call('ZADD', index, score, key)
      end
    end
    out[#out + 1] = id
  end
end
redis.call('SET', KEYS[2], last)
for log, position in pairs(newest) do
  redis.call('HSET', KEYS[3], log, position)
end
return out
)lua";

// KEYS: messages. ARGV: now_ms, max. Returns {id1, value1, id2, value2, ...} oldest first, at
// most max messages; index entries whose key is gone (Redis TTL) and messages expired by
// now_ms are removed on the way, as TBMQ repairs the set lazily on read. Walks the set in
// chunks so a small max on a long inbox does not read it all.
inline constexpr std::string_view read_script = R"lua(
local index = KEYS[1]
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local out = {}
local found = 0
local start = 0
while found < max do
  local chunk = redis.call('ZRANGE', index, start, start + 99)
  if #chunk == 0 then
    break
  end
  local removed = 0
  for _, key in ipairs(chunk) do
    if found >= max then
      break
    end
    local value = redis.call('GET', key)
    local expires = value and tonumber(string.match(value, '^%d|(%d+)|'))
    if not expires or expires <= now then
      if value then
        redis.call('DEL', key)
      end
      redis.call('ZREM', index, key)
      removed = removed + 1
    else
      found = found + 1
      out[#out + 1] = tonumber(string.match(key, '_(%d+)$'))
      out[#out + 1] = value
    end
  end
  start = start + #chunk - removed
end
return out
)lua";

// KEYS: messages. ARGV: packet ids. PUBACK / PUBCOMP, a batch at once; unknown ids are no-ops.
inline constexpr std::string_view remove_script = R"lua(
for i = 1, #ARGV do
  local key = KEYS[1] .. '_' .. ARGV[i]
  redis.call('ZREM', KEYS[1], key)
  redis.call('DEL', key)
end
return 1
)lua";

// KEYS: messages. ARGV: packet_id. PUBREC: flips the flag in place with KEEPTTL, so the marker
// keeps the message's expiry (TBMQ's SET without EX dropped it). Unknown id: no-op.
inline constexpr std::string_view mark_pubrel_script = R"lua(
local key = KEYS[1] .. '_' .. ARGV[1]
local value = redis.call('GET', key)
if not value then
  return 0
end
if string.sub(value, 1, 1) ~= '1' then
  redis.call('SET', key, '1' .. string.sub(value, 2), 'KEEPTTL')
end
return 1
)lua";

// KEYS: messages, last_packet_id, log_positions. Clean start: every message key, the index,
// the counter and the log positions.
inline constexpr std::string_view clear_script = R"lua(
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, key in ipairs(members) do
  redis.call('DEL', key)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
)lua";

inline constexpr std::array<std::string_view, inbox_script_count> inbox_scripts{
    append_script, read_script, remove_script, mark_pubrel_script, clear_script};

}  // namespace starling::adapters::redis
