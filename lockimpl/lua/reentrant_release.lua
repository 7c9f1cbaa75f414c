-- Reentrant release: undo one level of ARGV[1]'s hold on KEYS[1]; at zero
-- delete the key and wake waiters on the release channel ARGV[2] (an
-- argument, not a key, so it need not share the key's cluster slot).
-- Returns the hold count left, or -1 when ARGV[1] does not hold the key.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if n > 0 then
  return n
end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", ARGV[2], "1")
return 0
