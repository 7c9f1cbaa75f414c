package lockimpl

func init() {
	Register(Info{
		Name:        "unknown-acquire-held",
		Kind:        Broken,
		Description: "simple, but an acquire whose SET timed out or lost its connection is taken as acquired",
		Mistake: "an acquire whose outcome is unknown (a timeout, a broken connection) counts as acquired: " +
			"the SET may have been refused because another client holds the key, or not applied yet, " +
			"and the client works beside the holder",
	}, func(env Env) (Locker, error) {
		return &simple{nodeBase: newNodeBase(env), unknownIsHeld: true}, nil
	})
}
