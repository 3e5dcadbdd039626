--[[
  reprocess.lua -- the scripted twin of EMQ.REPROCESS: bring a dead job back to the
  back of pending, every counter kept.

    KEYS[1]  dead     P..dead
    KEYS[2]  pending  P..pending
    KEYS[3]  P        the queue's prefix
    ARGV[1]  id

  Reply: 1.
  Writes: ZREM dead id; INCR P..seq; HSET row state pending; ZADD pending <seq> id.
]]
local rcall = redis.call

if #KEYS ~= 3 then
  return redis.error_reply("ERR numkeys for 'emq.reprocess' must be 3")
end
if #ARGV ~= 1 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.reprocess' command")
end

local deadKey, pendingKey, prefix = KEYS[1], KEYS[2], KEYS[3]
local jobId = ARGV[1]
local rowKey = prefix .. 'job:' .. jobId

local state = rcall('HGET', rowKey, 'state')
if not state then
  return redis.error_reply('EMQNOJOB job ' .. jobId .. ' has no row')
end
if state ~= 'dead' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. state .. ', not dead')
end

rcall('ZREM', deadKey, jobId)
local seq = rcall('INCR', prefix .. 'seq')
rcall('HSET', rowKey, 'state', 'pending')
rcall('ZADD', pendingKey, seq, jobId)
return 1
