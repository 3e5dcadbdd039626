--[[
  enqueue.lua -- the scripted twin of EMQ.ENQUEUE: admit a job to pending.

    KEYS[1]  pending   P..pending
    KEYS[2]  P         the queue's prefix: the row is P..job:<id>, the counter P..seq
    ARGV[1]  id        or '*' for the next sequence number that names no key yet
    ARGV[2]  payload

  Reply: the id; nil when a row already exists under it (admission is idempotent).
  Writes: INCR P..seq; HSET row state pending attempts 0 payload <payload>;
          ZADD pending <seq> id.
]]
local rcall = redis.call

if #KEYS ~= 2 then
  return redis.error_reply("ERR numkeys for 'emq.enqueue' must be 2")
end
if #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.enqueue' command")
end

local pendingKey, prefix = KEYS[1], KEYS[2]
local jobId, payload = ARGV[1], ARGV[2]
local seqKey = prefix .. 'seq'
local seq

if jobId == '*' then
  -- one INCR per number tried; P..seq ends at the number used
  repeat
    seq = rcall('INCR', seqKey)
    jobId = string.format('%d', seq)
  until rcall('EXISTS', prefix .. 'job:' .. jobId) == 0
else
  if rcall('EXISTS', prefix .. 'job:' .. jobId) == 1 then
    return false
  end
  seq = rcall('INCR', seqKey)
end

rcall('HSET', prefix .. 'job:' .. jobId, 'state', 'pending', 'attempts', '0', 'payload', payload)
rcall('ZADD', pendingKey, seq, jobId)
return jobId
