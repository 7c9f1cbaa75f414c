-- Owner-checked renewal of a string lock: reset KEYS[1]'s TTL to ARGV[2] ms
-- only while it holds ARGV[1]. Returns 1 if renewed, 0 if not the owner.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
