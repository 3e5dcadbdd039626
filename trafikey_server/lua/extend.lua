--[[
  extend.lua -- the scripted twin of EMQ.EXTEND: move a held lease's deadline.

    KEYS[1]  active    P..active
    KEYS[2]  P         the queue's prefix
    ARGV[1]  id
    ARGV[2]  token     the attempts value the claim replied, compared as bytes
    ARGV[3]  lease_ms  (>= 1)

  Reply: 1.  A lease past its deadline that no sweep has recovered can still be extended.
  Writes: ZADD active <now + lease_ms> id.  (No lease_epoch.)
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
  return redis.error_reply("ERR numkeys for 'emq.extend' must be 2")
end
if #ARGV ~= 3 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.extend' command")
end

local activeKey, prefix = KEYS[1], KEYS[2]
local jobId, token = ARGV[1], ARGV[2]
local leaseMs, err = int(ARGV[3], 'lease_ms', 1)
if not leaseMs then
  return redis.error_reply(err)
end

local row = rcall('HMGET', prefix .. 'job:' .. jobId, 'state', 'attempts')
if not row[1] then
  return redis.error_reply('EMQNOJOB job ' .. jobId .. ' has no row')
end
if row[1] ~= 'active' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. row[1] .. ', not active')
end
if row[2] ~= token then
  return redis.error_reply('EMQLEASE job ' .. jobId .. ' is not held by token ' .. token)
end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

rcall('ZADD', activeKey, now + leaseMs, jobId)
return 1
