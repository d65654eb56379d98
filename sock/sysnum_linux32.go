//go:build linux && (386 || arm || mips || mipsle)

package sock

import "golang.org/x/sys/unix"

// sysSendfile is sendfile64(2): plain sendfile takes a 32-bit offset on
// 32-bit systems.
const sysSendfile = unix.SYS_SENDFILE64
