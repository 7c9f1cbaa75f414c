//go:build !race

package locktest

const raceDetector = false
