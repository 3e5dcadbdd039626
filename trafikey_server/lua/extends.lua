--[[
  extends.lua -- the scripted twin of EMQ.EXTENDS: extend many leases at once.

    KEYS[1]  active    P..active
    KEYS[2]  P         the queue's prefix
    ARGV[1]  lease_ms  (>= 1)
    ARGV[2], ARGV[3]   id1, token1
    ...                more (id, token) pairs

  Each pair is judged alone: a job with no row, a row that is not active or a stale
  token gives 0 and no write; any other pair is extended as extend.lua does.
  Reply: {1|0, ...}, one per pair, in order.
  Writes: ZADD active <now + lease_ms> id, for each pair that holds its lease.
]]
local rcall = redis.call

local function int(raw, name, low)
  local n = tonumber(raw)
  if n == nil or n % 1 ~= 0 then
    return nil, 'ERR value is not an integer or out of range'
  end
  if n < low then
    return nil, 'ERR ' .. name .. ' is out of range'
  end
  return n
end

if #KEYS ~= 2 then
  return redis.error_reply("ERR numkeys for 'emq.extends' must be 2")
end
if #ARGV < 3 or #ARGV % 2 == 0 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.extends' command")
end

local activeKey, prefix = KEYS[1], KEYS[2]
local leaseMs, err = int(ARGV[1], 'lease_ms', 1)
if not leaseMs then
  return redis.error_reply(err)
end

local time = rcall('TIME')
local deadline = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + leaseMs

local held = {}
for i = 2, #ARGV, 2 do
  local jobId, token = ARGV[i], ARGV[i + 1]
  local row = rcall('HMGET', prefix .. 'job:' .. jobId, 'state', 'attempts')
  if row[1] == 'active' and row[2] == token then
    rcall('ZADD', activeKey, deadline, jobId)
    held[#held + 1] = 1
  else
    held[#held + 1] = 0
  end
end
return held
