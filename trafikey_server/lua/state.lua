#!lua flags=no-writes
--[[
  state.lua -- EchoMQ.Metrics' state read: where one job is.

    KEYS[1]  P   the queue's prefix; the row is P..job:<id>
    ARGV[1]  id

  Reply: the row's state ('pending', 'active', 'scheduled' or 'dead'), or nil when the
  job has no row (never admitted, or completed).  Writes nothing.
]]
if #KEYS ~= 1 then
  return redis.error_reply("ERR numkeys for 'state' must be 1")
end
if #ARGV ~= 1 then
  return redis.error_reply("ERR wrong number of arguments for 'state' script")
end

return redis.call('HGET', KEYS[1] .. 'job:' .. ARGV[1], 'state')
