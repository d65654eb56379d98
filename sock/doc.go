// Package sock is the socket layer beneath Sluice's HTTP engine:
// listening sockets, the connections they accept, the system calls a
// server makes on sockets itself, and what the runtime's poller is told.
// It names no HTTP. The package's unsafe code is in its sys_*.go files.
//
// # Listeners
//
// Listen and ListenShared open listening sockets; ListenerFile and
// FileListener hand one to a child process and take it back there. On
// Linux a TCP listener's Accept returns a *Conn, served with direct
// system calls (accept4, recvfrom, sendto or sendmsg, close) that join
// the runtime's poller only when an operation would block: a short
// connection costs no epoll_ctl at all. SetDeferAccept switches
// TCP_DEFER_ACCEPT on such a listener; Temporary and AcceptBackoff pace an
// accept loop through running out of descriptors.
//
// # System calls
//
// Recv, Send, Peek, Sendfile, SetCork and EpollReady take a descriptor,
// which the caller gets from a syscall.RawConn (see RawConn) and which
// must stay open for the call: call them inside the RawConn's Read,
// Write or Control. They return the system call's syscall.Errno as the
// error, so that a caller compares it with syscall.EAGAIN and
// syscall.EINTR, and allocate nothing.
//
// Where a function takes nb, true says the descriptor is non-blocking
// (RawConn reports it): the call then returns at once rather than waiting
// (EAGAIN), so it is made with syscall.RawSyscall and the goroutine keeps
// its P through it. syscall.Syscall announces a call that may block, and
// one that runs past a sysmon tick (20 µs; sending 80 KiB over loopback
// does, as the kernel runs the receiving side in the same call) has its P
// handed to another thread, which the goroutine must then win back: two
// thread switches per response. With nb false the calls are made with
// Syscall, as the syscall package makes them.
//
// Resident tells whether a file's span is in the page cache, so that a
// Sendfile of it with nb cannot wait for a disk; its answers are
// remembered about a second, and SweepResidency forgets old ones.
//
// # Platforms
//
// The listeners' own sockets, Send, Sendfile, SetCork, EpollReady,
// Resident and the shared listener (FileListener) are Linux's. On other
// Unix systems Listen returns the net package's listeners, Recv is
// read(2) and Send a sendto(2) per buffer; without Unix (Windows) RawConn
// reports no RawConn and Recv is never called.
package sock
