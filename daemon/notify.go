package daemon

import (
	"net"
	"os"
	"strconv"
)

// Notify tells the service manager that started this process (systemd,
// with Type=notify; see sd_notify(3)) about its state: state is one or
// more lines such as "READY=1", sent as one datagram to the Unix socket
// $NOTIFY_SOCKET names (a leading "@" for the abstract namespace).
// Without NOTIFY_SOCKET it does nothing and returns nil. A Server sends
// READY=1, RELOADING=1 and STOPPING=1 itself (see NotifyReady); a
// supervisor.Master too, and MAINPID= when a binary upgrade hands over.
func Notify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

// NotifyReady says the server serves: at start, and when a reload is
// done (whether it was applied or rejected).
func NotifyReady() error { return Notify("READY=1") }

// NotifyReloading says a reload begins; NotifyReady follows when it is
// done. On Linux the message carries the monotonic clock, which
// Type=notify-reload units require.
func NotifyReloading() error {
	state := "RELOADING=1"
	if usec, ok := monotonicUsec(); ok {
		state += "\nMONOTONIC_USEC=" + strconv.FormatInt(usec, 10)
	}
	return Notify(state)
}

// NotifyStopping says the server is shutting down.
func NotifyStopping() error { return Notify("STOPPING=1") }

// NotifyMainPID says that the service's main process is now pid: a
// binary upgrade's new master, once the old one hands over to it.
func NotifyMainPID(pid int) error { return Notify("MAINPID=" + strconv.Itoa(pid)) }
