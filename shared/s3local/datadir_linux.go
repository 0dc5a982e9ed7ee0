package s3local

import (
	"os"
	"path/filepath"
	"syscall"
)

// memDir is where a gateway keeps its data when the machine has a tmpfs
// for it: /dev/shm when it is a directory this process may write, holding
// at least minMemFree bytes free, whose files take user extended
// attributes (versitygw's posix backend keeps an object's metadata in
// them; tmpfs has them since Linux 6.6). Else "".
func memDir() string {
	const dir = "/dev/shm"
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Bavail*uint64(fs.Bsize) < minMemFree {
		return ""
	}
	probe, err := os.MkdirTemp(dir, "s3q-probe-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(probe)
	f := filepath.Join(probe, "x")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		return ""
	}
	if err := syscall.Setxattr(f, "user.s3q", []byte("1"), 0); err != nil {
		return ""
	}
	return dir
}
