-- Reentrant acquire: KEYS[1] is a hash of owner -> hold count.
-- ARGV[1] = owner, ARGV[2] = ttl in ms, ARGV[3] (optional) = the levels the
-- owner's client holds by its own count.
-- Takes the key when it is free or already ours (one more level, TTL reset).
-- A count of ours other than the client's own (above it: levels a release
-- that never reached the server left behind, a cancelled or cut release)
-- is set to ARGV[3], the levels the client holds, before the new level, so
-- the client's last release frees the key again.
-- Returns the hold count after this acquire, or 0 when someone else holds it.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  if ARGV[3] and tonumber(redis.call("HGET", KEYS[1], ARGV[1]) or "0") ~= tonumber(ARGV[3]) and redis.call("EXISTS", KEYS[1]) == 1 then
    redis.call("HSET", KEYS[1], ARGV[1], ARGV[3])
  end
  local n = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return n
end
return 0
