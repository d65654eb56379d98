package admin

import (
	"net"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerOf names the process at the other end of c by its credentials
// (SO_PEERCRED): "uid=1000(alice) pid=4242".
func peerOf(c *net.UnixConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return "unknown"
	}
	var cred *unix.Ucred
	var cerr error
	rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil || cred == nil {
		return "unknown"
	}
	uid := strconv.Itoa(int(cred.Uid))
	who := "uid=" + uid
	if u, err := user.LookupId(uid); err == nil {
		who += "(" + u.Username + ")"
	}
	return who + " pid=" + strconv.Itoa(int(cred.Pid))
}
