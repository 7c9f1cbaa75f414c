-- Owner-checked renewal of a plain lock: reset KEYS[1]'s TTL to ARGV[2] ms
-- only while it holds our token ARGV[1]. Returns 1 if renewed, 0 if not the
-- owner.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
