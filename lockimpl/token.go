package lockimpl

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken returns a 128-bit random owner token as 32 hex characters.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	return hex.EncodeToString(b[:])
}
