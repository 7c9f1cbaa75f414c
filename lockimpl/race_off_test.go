//go:build !race

package lockimpl

const raceEnabled = false
