package lockimpl

func init() {
	Register(Info{
		Name:        "deadline-from-reply",
		Kind:        Broken,
		Description: "simple, but the lease's TTL is counted from the SET's reply instead of from before it was sent",
		Mistake: "the key's TTL runs from when the server applied the SET, which is before the reply: " +
			"an acquire whose reply is slow (a pause or a slow link between the SET and its reply) " +
			"believes its lease lasts that long past the key's expiry, while another client acquires the expired key",
	}, func(env Env) (Locker, error) {
		return &simple{nodeBase: newNodeBase(env), fromReply: true}, nil
	})
}
