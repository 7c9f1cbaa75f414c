-- Compare-and-delete: free KEYS[1] only if it still holds our token, and wake
-- waiters on the release channel KEYS[2].
-- ARGV[1] = token. Returns 1 if deleted, 0 if not the owner.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  redis.call("PUBLISH", KEYS[2], "1")
  return 1
end
return 0
