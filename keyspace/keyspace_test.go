package keyspace

import (
	"strings"
	"testing"
)

func TestKeyShort(t *testing.T) {
	p := Default("0a1b2c3d")
	for _, tc := range []struct{ key, short string }{
		{p.Key("k0"), "k0"},
		{p.Key("k17"), "k17"},
		{p.Key("k0") + ":fence", "{k0}:fence"}, // fenced's counter
		{string(p) + "rueidislock:0:" + p.Key("k0"), "rueidislock:0:{k0}"}, // a library's own prefix
		{p.Aux("rtt"), "rtt"},
	} {
		if !strings.HasPrefix(tc.key, string(p)) {
			t.Errorf("%q is not under %q", tc.key, p)
		}
		if s, ok := p.Short(tc.key); !ok || s != tc.short {
			t.Errorf("Short(%q) = %q, %v; want %q", tc.key, s, ok, tc.short)
		}
	}
	if _, ok := p.Short("k0"); ok {
		t.Error("a key outside the prefix maps as the run's")
	}
	// A library's own name before the key it is given is the run's too.
	if s, ok := p.Short("lock." + p.Key("k0")); !ok || s != "lock.{k0}" || !p.Names("lock."+p.Key("k0")) {
		t.Errorf(`Short("lock.%s") = %q, %v; want "lock.{k0}", named`, p.Key("k0"), s, ok)
	}
	if p.Names("lock.k0") || p.Names("x"+string(p)) {
		t.Error("a key that names no lock key of the run is the run's")
	}
	if k := Prefix("").Key("k0"); k != "k0" {
		t.Errorf("empty prefix: %q", k)
	}
}

func TestPatternEscapes(t *testing.T) {
	if got := Prefix(`a*b?[c]\:`).Pattern(); got != `a\*b\?\[c\]\\:*` {
		t.Errorf("pattern %q", got)
	}
}

func TestCheck(t *testing.T) {
	for _, bad := range []string{"", "a b:", "x\n", strings.Repeat("x", MaxLen+1)} {
		if Check(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := Check("myapp:lockchaos:"); err != nil {
		t.Error(err)
	}
	if a, b := NewRunID(), NewRunID(); len(a) != 8 || a == b {
		t.Errorf("run ids %q %q", a, b)
	}
}
