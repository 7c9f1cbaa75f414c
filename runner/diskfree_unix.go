//go:build unix

package runner

import "golang.org/x/sys/unix"

// diskFree is the space available to this user on dir's file system.
func diskFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}
