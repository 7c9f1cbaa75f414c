//go:build race

package locktest

// raceDetector: the binary runs with -race (every goroutine several times
// slower, so timing scenarios judge a different machine).
const raceDetector = true
