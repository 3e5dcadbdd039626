#!lua flags=no-writes
--[[
  counts.lua -- EchoMQ.Metrics' count read: how many jobs each place holds.

    KEYS[1]  pending   P..pending
    KEYS[2]  active    P..active
    KEYS[3]  schedule  P..schedule
    KEYS[4]  dead      P..dead

  Reply: {ZCARD pending, ZCARD active, ZCARD schedule, ZCARD dead}.  Writes nothing.
]]
local rcall = redis.call

if #KEYS ~= 4 then
  return redis.error_reply("ERR numkeys for 'counts' must be 4")
end
if #ARGV ~= 0 then
  return redis.error_reply("ERR wrong number of arguments for 'counts' script")
end

return {rcall('ZCARD', KEYS[1]), rcall('ZCARD', KEYS[2]), rcall('ZCARD', KEYS[3]), rcall('ZCARD', KEYS[4])}
