package admin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// listenUnix listens on a Unix socket at path with mode 0600, owned by
// uid and gid (when uid >= 0 and this process is root), and returns it
// with the socket file's FileInfo. The socket is made in a private
// directory beside path and renamed into place, so that no one can
// connect to it before its mode is set. With replace, a socket another
// process listens on at path is replaced too.
func listenUnix(path string, uid, gid int, replace bool) (net.Listener, os.FileInfo, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("%s exists and is no socket: remove it, or give admin another socket path", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil && !replace {
			c.Close()
			return nil, nil, fmt.Errorf("%s: another process listens on it (another sluice's admin API?): stop it, or give admin another socket path", path)
		} else if err == nil {
			c.Close()
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".admin-")
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create the socket in %s: %w", filepath.Dir(path), err)
	}
	defer os.RemoveAll(tmp)
	at := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", at)
	if err != nil {
		return nil, nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // renamed: Server.Close removes path
	err = os.Chmod(at, 0o600)
	if err == nil && uid >= 0 && os.Geteuid() == 0 {
		err = os.Lchown(at, uid, gid)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Lstat(at)
	}
	if err == nil {
		err = os.Rename(at, path)
	}
	if err != nil {
		ln.Close()
		return nil, nil, errors.Join(fmt.Errorf("cannot put the socket at %s", path), err)
	}
	return ln, fi, nil
}
