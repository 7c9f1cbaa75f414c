package lockimpl

import (
	"regexp"
	"strings"
	"testing"
)

// tokenIn's tokens look like NewToken's, differ from each other, and keep
// their bytes: each lives in its own buffer, which nothing writes again.
func TestTokenInSharesItsBuffer(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	var kept, copies []string
	for i := 0; i < 1000; i++ {
		tl := &tokenLease{}
		tok := tokenIn(&tl.buf)
		copies = append(copies, strings.Clone(tok))
		if !hex32.MatchString(tok) {
			t.Fatalf("token %q: want 32 lowercase hex characters, as NewToken's %q", tok, NewToken())
		}
		if seen[tok] {
			t.Fatalf("token %q made twice in %d", tok, i+1)
		}
		seen[tok] = true
		kept = append(kept, tok)
	}
	for i, tok := range kept {
		if tok != copies[i] {
			t.Fatalf("token %d changed after it was made: %q, made as %q", i, tok, copies[i])
		}
	}
}

// A token costs no allocation of its own: its bytes are the lease's
// (the simple lock's acquire allocates the two together).
func TestTokenInAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation moves the random bytes to the heap")
	}
	tl := &tokenLease{}
	if n := testing.AllocsPerRun(100, func() { _ = tokenIn(&tl.buf) }); n != 0 {
		t.Errorf("tokenIn allocated %.0f times a call: want 0 (the lease holds the bytes)", n)
	}
}
