package lockimpl

var noOwnerCheckAcquireScript = script("reentrant_acquire_no_owner_check")

func init() {
	Register(Info{
		Name:        "reentrant-no-owner-check",
		Kind:        Broken,
		Reentrant:   true,
		Description: "reentrant whose acquire HINCRBYs the owner's field without checking whose hash it is",
		Mistake: "no owner check on acquire: a second client adds its own field to the hash another client " +
			"holds and both believe they hold the lock; the first owner's release then deletes the key under the second",
	}, func(env Env) (Locker, error) {
		r := newReentrant(env)
		r.acquire = noOwnerCheckAcquireScript
		return r, nil
	})
}
