//go:build !unix

package runner

import "errors"

// diskFree is unknown here: only the history size limit applies.
func diskFree(string) (int64, error) {
	return 0, errors.New("free disk space: not measured on this platform")
}
