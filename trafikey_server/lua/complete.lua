--[[
  complete.lua -- the scripted twin of EMQ.COMPLETE: settle a held job as done.

    KEYS[1]  active  P..active
    KEYS[2]  P       the queue's prefix
    ARGV[1]  id
    ARGV[2]  token   the attempts value the claim replied, compared as bytes

  Reply: 1.
  Writes: ZREM active id; DEL row (completion deletes the row).
]]
local rcall = redis.call

if #KEYS ~= 2 then
  return redis.error_reply("ERR numkeys for 'emq.complete' must be 2")
end
if #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.complete' command")
end

local activeKey, prefix = KEYS[1], KEYS[2]
local jobId, token = ARGV[1], ARGV[2]
local rowKey = prefix .. 'job:' .. jobId

local row = rcall('HMGET', rowKey, 'state', 'attempts')
if not row[1] then
  return redis.error_reply('EMQNOJOB job ' .. jobId .. ' has no row')
end
if row[1] ~= 'active' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. row[1] .. ', not active')
end
if row[2] ~= token then
  return redis.error_reply('EMQLEASE job ' .. jobId .. ' is not held by token ' .. token)
end

rcall('ZREM', activeKey, jobId)
rcall('DEL', rowKey)
return 1
