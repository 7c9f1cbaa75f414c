-- Reentrant acquire: KEYS[1] is a hash of owner -> hold count.
-- ARGV[1] = owner, ARGV[2] = ttl in ms.
-- Takes the key when it is free or already ours (one more level, TTL reset).
-- Returns the hold count after this acquire, or 0 when someone else holds it.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local n = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return n
end
return 0
