package lockimpl

import (
	"crypto/rand"
	"encoding/hex"
	"unsafe"
)

// NewToken returns a 128-bit random owner token as 32 hex characters.
func NewToken() string {
	var buf [tokenLen]byte
	fillToken(&buf)
	return string(buf[:])
}

// tokenLen is the length of NewToken's tokens.
const tokenLen = 32

// tokenIn writes a NewToken into buf and returns it as a string that
// shares buf's bytes, so the token costs no allocation of its own (it lives
// in whatever holds buf, a lease). buf must not change afterwards.
func tokenIn(buf *[tokenLen]byte) string {
	fillToken(buf)
	return unsafe.String(&buf[0], tokenLen)
}

// fillToken writes 128 random bits into buf as hex.
func fillToken(buf *[tokenLen]byte) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	hex.Encode(buf[:], b[:])
}
