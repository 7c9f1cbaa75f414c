-- Owner-checked renewal of a reentrant hold: reset KEYS[1]'s TTL to ARGV[2]
-- ms only while ARGV[1] holds it. Returns 1 if renewed, 0 if not the owner.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
