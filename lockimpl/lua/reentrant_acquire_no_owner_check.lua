-- A broken reentrant acquire (the reentrant-no-owner-check control):
-- KEYS[1] is a hash of owner -> hold count, ARGV[1] = owner, ARGV[2] = ttl
-- in ms. It adds one level to ARGV[1]'s field without asking whose the
-- hash is: a second owner's field lands in a hash another owner holds.
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return n
