--[[
  stalled_check.lua -- the scripted twin of EMQ.STALLED.CHECK: recover expired leases.

    KEYS[1]  active       P..active
    KEYS[2]  pending      P..pending
    KEYS[3]  dead         P..dead
    KEYS[4]  P            the queue's prefix
    ARGV[1]  max_stalled  (>= 0)
    ARGV[2]  limit        optional, default 1000 (>= 1): at most this many due entries

  Takes the active entries whose deadline <= now, earliest first.  Every expiry of an
  active row is counted in its stalled field (this script reads no lease_epoch); past
  max_stalled the job is dead, otherwise it goes to the back of pending.  An entry
  whose row is not 'active' (no row at all, or a row that lives elsewhere) is dropped
  from active.
  Reply: {{requeued ids...}, {dead ids...}}, each in sweep order.
  Writes, for each recovered job: HINCRBY row stalled 1; ZREM active id; then
    dead:    HSET row state dead; ZADD dead <now> id
    pending: INCR P..seq; HSET row state pending; ZADD pending <seq> id
  For each dropped entry: ZREM active id.
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

if #KEYS ~= 4 then
  return redis.error_reply("ERR numkeys for 'emq.stalled.check' must be 4")
end
if #ARGV ~= 1 and #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.stalled.check' command")
end

local activeKey, pendingKey, deadKey, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local maxStalled, err = int(ARGV[1], 'max_stalled', 0)
if not maxStalled then
  return redis.error_reply(err)
end
local limit = 1000
if #ARGV == 2 then
  limit, err = int(ARGV[2], 'limit', 1)
  if not limit then
    return redis.error_reply(err)
  end
end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local requeued, buried = {}, {}
local due = rcall('ZRANGEBYSCORE', activeKey, '-inf', now, 'LIMIT', 0, limit)
for _, jobId in ipairs(due) do
  local rowKey = prefix .. 'job:' .. jobId
  if rcall('HGET', rowKey, 'state') == 'active' then
    local stalled = rcall('HINCRBY', rowKey, 'stalled', 1)
    rcall('ZREM', activeKey, jobId)
    if stalled > maxStalled then
      rcall('HSET', rowKey, 'state', 'dead')
      rcall('ZADD', deadKey, now, jobId)
      buried[#buried + 1] = jobId
    else
      local seq = rcall('INCR', prefix .. 'seq')
      rcall('HSET', rowKey, 'state', 'pending')
      rcall('ZADD', pendingKey, seq, jobId)
      requeued[#requeued + 1] = jobId
    end
  else
    rcall('ZREM', activeKey, jobId)
  end
end
return {requeued, buried}
