--[[
  claim.lua -- the scripted twin of EMQ.CLAIM: lease the head of pending.

    KEYS[1]  pending   P..pending
    KEYS[2]  active    P..active
    KEYS[3]  P         the queue's prefix (P..paused gates the claim)
    ARGV[1]  lease_ms  (>= 1)

  Reply: {id, payload, attempts}, attempts being the new fencing token; {} when the
  queue is paused or empty, or when the head had no row (it is dropped from pending).
  Writes: ZREM pending id; HINCRBY row attempts 1; HSET row state active;
          ZADD active <now + lease_ms> id.  (No lease_epoch: that is the native verb's.)
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

if #KEYS ~= 3 then
  return redis.error_reply("ERR numkeys for 'emq.claim' must be 3")
end
if #ARGV ~= 1 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.claim' command")
end

local pendingKey, activeKey, prefix = KEYS[1], KEYS[2], KEYS[3]
local leaseMs, err = int(ARGV[1], 'lease_ms', 1)
if not leaseMs then
  return redis.error_reply(err)
end

if rcall('EXISTS', prefix .. 'paused') == 1 then
  return {}
end

local jobId = rcall('ZRANGE', pendingKey, 0, 0)[1]
if not jobId then
  return {}
end

local rowKey = prefix .. 'job:' .. jobId
local row = rcall('HMGET', rowKey, 'state', 'payload')
local state = row[1]
if not state then
  -- a ghost: clear it away; the next claim sees the next job
  rcall('ZREM', pendingKey, jobId)
  return {}
end
if state ~= 'pending' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. state .. ', not pending')
end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

rcall('ZREM', pendingKey, jobId)
local attempts = rcall('HINCRBY', rowKey, 'attempts', 1)
rcall('HSET', rowKey, 'state', 'active')
rcall('ZADD', activeKey, now + leaseMs, jobId)
return {jobId, row[2], attempts}
