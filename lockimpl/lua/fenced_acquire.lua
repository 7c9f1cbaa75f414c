-- Fenced acquire: SET KEYS[1] ARGV[1] NX PX ARGV[2] and, only when that took
-- the key, INCR the fencing counter KEYS[2] in the same atomic step.
-- Returns the new fencing token, or 0 when the key is held.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return 0
