package lockimpl

var earlyFreeReleaseScript = script("reentrant_release_early")

func init() {
	Register(Info{
		Name:        "reentrant-early-free",
		Kind:        Broken,
		Reentrant:   true,
		Description: "reentrant whose release deletes the key when the hold count drops to 1, not 0",
		Mistake: "off by one: leaving a nested level frees the key while its owner still holds it at depth 1, " +
			"so another client acquires it while the owner goes on in its critical section",
	}, func(env Env) (Locker, error) {
		r := newReentrant(env)
		r.release = earlyFreeReleaseScript
		return r, nil
	})
}
