--[[
  schedule.lua -- the scripted twin of EMQ.SCHEDULE: admit a job to schedule.

    KEYS[1]  schedule   P..schedule
    KEYS[2]  P          the queue's prefix
    ARGV[1]  id         or '*' for the next sequence number that names no key yet
    ARGV[2]  payload
    ARGV[3]  run_at_ms  (>= 0; a time in the past is fine: the next promote moves it)

  Reply: the id; nil when a row already exists under it.
  Writes: (for '*' only: INCR P..seq); HSET row state scheduled attempts 0 payload
          <payload>; ZADD schedule <run_at_ms> id.
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
  return redis.error_reply("ERR numkeys for 'emq.schedule' must be 2")
end
if #ARGV ~= 3 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.schedule' command")
end

local scheduleKey, prefix = KEYS[1], KEYS[2]
local jobId, payload = ARGV[1], ARGV[2]
local runAt, err = int(ARGV[3], 'run_at_ms', 0)
if not runAt then
  return redis.error_reply(err)
end

if jobId == '*' then
  repeat
    jobId = string.format('%d', rcall('INCR', prefix .. 'seq'))
  until rcall('EXISTS', prefix .. 'job:' .. jobId) == 0
elseif rcall('EXISTS', prefix .. 'job:' .. jobId) == 1 then
  return false
end

rcall('HSET', prefix .. 'job:' .. jobId, 'state', 'scheduled', 'attempts', '0', 'payload', payload)
rcall('ZADD', scheduleKey, runAt, jobId)
return jobId
