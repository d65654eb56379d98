//go:build linux && !(386 || arm || mips || mipsle)

package sock

import "golang.org/x/sys/unix"

// sysSendfile is sendfile(2), which takes a 64-bit offset here.
const sysSendfile = unix.SYS_SENDFILE
