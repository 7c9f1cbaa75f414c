// Package keyspace names the keys a run creates at the server. Every key
// lives under the run's prefix, so a run on a user's server (backend
// external) can tell its keys from the user's: it checks that none exist
// before it starts, observes only them, and removes only them afterwards.
//
// A lock key is Prefix + "{" + short + "}": the hash tag keeps the cluster
// slot of the short name, and a key a lock derives from the one it is given
// (fenced's "<key>:fence", which appends to a key that has a hash tag) stays
// under the prefix too. History events and reports keep the short names.
package keyspace

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// Prefix is a run's key prefix, e.g. "lc:3f9a0c1e:".
type Prefix string

// NewRunID returns a random run id of 8 hex digits.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Default is the prefix of run id: "lc:<id>:".
func Default(runID string) Prefix { return Prefix("lc:" + runID + ":") }

// MaxLen bounds a prefix: it is repeated in every key and every history
// line's server events.
const MaxLen = 64

// Check says why p is no usable prefix, or nil.
func Check(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("key prefix is empty (every key the harness creates must be under a prefix)")
	case len(p) > MaxLen:
		return fmt.Errorf("key prefix %q is %d bytes, more than %d", p, len(p), MaxLen)
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("key prefix %q holds a space or control character", p)
		}
	}
	return nil
}

// Key is the server key of lock key short (short itself for the empty
// prefix: callers that name no prefix keep the bare names).
func (p Prefix) Key(short string) string {
	if p == "" {
		return short
	}
	return string(p) + "{" + short + "}"
}

// Aux is the server key of a harness key that is not a lock key (bench
// yardsticks): Prefix + name.
func (p Prefix) Aux(name string) string { return string(p) + name }

// Short maps a server key back to the name history events use: a lock key
// to its short name, a key derived from a lock key ("<p>{k0}:fence") to the
// derivation of the short one in brackets ("{k0}:fence", as keys were named
// before prefixes), any other key under p to itself without p. ok is false
// for a key not under p.
func (p Prefix) Short(key string) (short string, ok bool) {
	if p == "" {
		return key, true
	}
	rest, ok := strings.CutPrefix(key, string(p))
	if !ok {
		if !strings.Contains(key, string(p)+"{") {
			return key, false
		}
		// A library that writes its own name before the key it is
		// given ("lock.<p>{k0}"): the lock key inside, as below.
		rest = key
	}
	if strings.HasPrefix(rest, "{") {
		if j := strings.IndexByte(rest, '}'); j == len(rest)-1 {
			return rest[1:j], true
		}
	}
	// A library that adds its own prefix before the key (rueidislock:
	// "<p>rueidislock:0:<p>{k0}") names the lock key inside.
	return strings.ReplaceAll(rest, string(p)+"{", "{"), true
}

// Pattern is the SCAN MATCH / PSUBSCRIBE glob of every key under p (glob
// characters in p escaped).
func (p Prefix) Pattern() string { return Glob(string(p)) + "*" }

// Names reports whether key is the run's: under p, or a library's own name
// around a lock key ("lock.<p>{k0}": a lock that writes its own prefix
// before the key it is given). The observer and the command record keep
// these (NamesPattern); cleaning up removes only the keys under p.
func (p Prefix) Names(key string) bool {
	return p == "" || strings.HasPrefix(key, string(p)) || strings.Contains(key, string(p)+"{")
}

// NamesPattern is the PSUBSCRIBE glob of every key Names keeps (and of a
// few it does not: the subscriber checks Names).
func (p Prefix) NamesPattern() string { return "*" + Glob(string(p)) + "*" }

// Glob escapes s for a Redis glob pattern (stringmatchlen: * ? [ ] \).
func Glob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
