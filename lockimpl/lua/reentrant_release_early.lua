-- A broken reentrant release (the reentrant-early-free control): undo one
-- level of ARGV[1]'s hold on KEYS[1], but delete the key when the count
-- left is 1, not 0: leaving a nested level frees the lock its owner still
-- holds at depth 1. ARGV[2] is the release channel. Returns the hold count
-- left, or -1 when ARGV[1] does not hold the key.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if n > 1 then
  return n
end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", ARGV[2], "1")
return n
