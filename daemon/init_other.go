//go:build !linux

package daemon

// RunAsInit does nothing: only on Linux is sluice its container's init
// (see init_linux.go).
func RunAsInit(args []string) (status int, ran bool, err error) { return 0, false, nil }

// UnderInit reports false: only on Linux does RunAsInit start a server.
func UnderInit() bool { return false }
