package lockimpl

import (
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script loads lua/<name>.lua. Scripts run by EVALSHA, falling back to EVAL
// on NOSCRIPT (redis.Script.Run), so a restarted or failed-over server that
// lost its script cache keeps working.
func script(name string) *redis.Script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lockimpl: embedded script %s missing: %v", name, err))
	}
	return redis.NewScript(string(src))
}

// releaseChannel is the pub/sub channel a release of key publishes on.
func releaseChannel(key string) string { return "lockchaos:released:" + key }
