#pragma once

// The shared counters' Lua script (redis_shared_counters.h): one multi-window token bucket,
// atomic on Redis, loaded with SCRIPT LOAD and called with EVALSHA.
//
// A bucket is one HASH (TBMQ names the device-persisted one devicePersistedMsgsLimit::bucket):
//   cfg        the limits it was built for ("cap,seconds,cap,seconds...")
//   n          number of windows
//   last       wall time (ms) of the last refill
//   t<i>, r<i> tokens of window i, and capacity * elapsed_ms not yet a whole token (< period_ms)
// Refill is Bucket4j's greedy one, as the embedded adapter: capacity/period tokens
// continuously, never beyond capacity, fractions carried. Time is the caller's wall clock
// (ARGV now_ms), so an injected clock rules in tests; a caller whose clock is behind `last`
// (another node's) refills nothing rather than going back. A bucket built for other limits is
// rebuilt with each new window holding min(its capacity, tokens available before): a
// reconfiguration never hands out a fresh burst. The key expires after the longest period
// without a call: by then every window would be full, which is what an absent key means.
//
// KEYS: bucket. ARGV: now_ms, "consume"|"refund", tokens, n, then (capacity, seconds) per
// window. consume returns the tokens granted (0..tokens); refund returns the tokens now
// available (the emptiest window). Lua numbers are doubles: exact while capacity * period_ms
// stays under 2^53 (e.g. a million tokens per day).

#include <string_view>

namespace starling::adapters::redis {

inline constexpr std::string_view bucket_script = R"lua(
local key = KEYS[1]
local now = tonumber(ARGV[1])
local refund = ARGV[2] == 'refund'
local want = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local caps, pers = {}, {}
local cfg = {}
local longest = 0
for i = 1, n do
  caps[i] = tonumber(ARGV[3 + 2 * i])
  pers[i] = tonumber(ARGV[4 + 2 * i]) * 1000
  cfg[#cfg + 1] = ARGV[3 + 2 * i]
  cfg[#cfg + 1] = ARGV[4 + 2 * i]
  if pers[i] > longest then longest = pers[i] end
end
cfg = table.concat(cfg, ',')
local raw = redis.call('HGETALL', key)
local h = {}
for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end
local tokens, rem = {}, {}
local last = now
if h.cfg == cfg then
  last = tonumber(h.last)
  local elapsed = now - last
  if elapsed < 0 then elapsed = 0 else last = now end
  for i = 1, n do
    local t = tonumber(h['t' .. i])
    local r = tonumber(h['r' .. i])
    if t >= caps[i] then
      t = caps[i]
      r = 0
    else
      local e = elapsed
      if e > pers[i] then e = pers[i] end
      local divided = caps[i] * e + r
      local add = math.floor(divided / pers[i])
      if add >= caps[i] - t then
        t = caps[i]
        r = 0
      else
        t = t + add
        r = divided - add * pers[i]
      end
    end
    tokens[i] = t
    rem[i] = r
  end
else
  local avail = nil
  if h.n then
    for i = 1, tonumber(h.n) do
      local t = tonumber(h['t' .. i])
      if avail == nil or t < avail then avail = t end
    end
  end
  for i = 1, n do
    tokens[i] = caps[i]
    if avail ~= nil and avail < caps[i] then tokens[i] = avail end
    rem[i] = 0
  end
end
local answer
if refund then
  answer = nil
  for i = 1, n do
    tokens[i] = tokens[i] + want
    if tokens[i] >= caps[i] then
      tokens[i] = caps[i]
      rem[i] = 0
    end
    if answer == nil or tokens[i] < answer then answer = tokens[i] end
  end
else
  answer = want
  for i = 1, n do
    if tokens[i] < answer then answer = tokens[i] end
  end
  for i = 1, n do tokens[i] = tokens[i] - answer end
end
redis.call('DEL', key)
local fields = {'cfg', cfg, 'n', n, 'last', last}
for i = 1, n do
  fields[#fields + 1] = 't' .. i
  fields[#fields + 1] = tokens[i]
  fields[#fields + 1] = 'r' .. i
  fields[#fields + 1] = rem[i]
end
redis.call('HSET', key, unpack(fields))
redis.call('PEXPIRE', key, longest)
return answer
)lua";

}  // namespace starling::adapters::redis
