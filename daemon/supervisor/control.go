//go:build linux

package supervisor

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// The file descriptors a worker inherits (exec.Cmd.ExtraFiles), after
// stdin, stdout and stderr (stderr is a pipe the master reads):
//
//	3      the control channel: this worker's end of a SOCK_SEQPACKET
//	       socketpair, one JSON message per packet (see message)
//	4      the setup pipe: the master writes one JSON setup (the config's
//	       name and bytes, the listen addresses, the health settings) and
//	       closes it
//	5 + i  the listening socket of setup.Addrs[i], shared with the master
//	       and every other worker
//	5 + len(Addrs) + j
//	       the UDP socket of setup.H3Addrs[j], this worker's own in the
//	       master's SO_REUSEPORT group for the address (quic.go)
const (
	fdControl   = 3
	fdSetup     = 4
	fdListeners = 5
)

// setup is what the master tells a worker at its start.
type setup struct {
	ID     int              // the worker's id, in log records (worker=ID)
	Name   string           // the config file's name: relative paths resolve against its directory
	Config []byte           // the config file's bytes, as the master validated them
	Addrs  []config.Address // the addresses of the inherited listeners, in fd order
	Health config.Health    // with defaults
	Grace  time.Duration    // for a shutdown the worker starts itself (SIGTERM)
	N      int              // the generation's number of workers, which share the machine

	Upstreams map[string][]admin.HostSpec // the upstream sets changed through the admin API, to apply at the start

	H3Addrs    []config.Address // the addresses of the inherited UDP sockets, in fd order after Addrs' (none: bind them)
	Tag        uint32           // the tag of the worker's QUIC connection IDs, when it has H3Addrs
	QUICSecret []byte           // the QUIC secret every worker shares (stateless resets, tokens); never logged
}

// Message types.
const (
	// worker to master
	msgReady  = "ready"  // the worker serves; PID set
	msgBeat   = "beat"   // a heartbeat; Stats set
	msgError  = "error"  // the worker cannot start; Error set, then it exits
	msgClosed = "closed" // told to stop or drain, the worker accepts no new connection
	// master to worker
	msgProbe  = "probe"  // with a socket in SCM_RIGHTS: serve it as an HTTP connection
	msgStop   = "stop"   // shut down (close idle connections) within Grace, then exit
	msgDrain  = "drain"  // drain (keep idle connections until Grace, busy ones until Hard if set), then exit
	msgReopen = "reopen" // reopen the log files
	msgView   = "view"   // every worker's status, for the status page; Workers set
	// old master to the new one of a binary upgrade (upgrade.go)
	msgSecret = "secret" // the workers' QUIC secret: Secret
	// both ways (see purge.go)
	msgPurge  = "purge"  // worker to master: relay Purge to the other workers, ID set; master to worker: apply it, answer with its ID
	msgPurged = "purged" // the answer to a msgPurge: Purged, Processes (from the master), Error when not all applied it
	// master to worker, and the answers (see admin.go)
	msgUpstream      = "upstream"       // apply Change to the upstream set Set; ID 0: no answer
	msgUpstreamDone  = "upstream-done"  // State, or Error and ErrKind
	msgUpstreams     = "upstreams"      // list the upstream sets
	msgUpstreamsDone = "upstreams-done" // Sets
	// both ways (see scrape.go)
	msgScrape  = "scrape"  // worker to master: send me the other workers' metrics, ID set; master to worker: answer with yours
	msgScraped = "scraped" // a worker's metrics (Metrics), or from the master, without Metrics: no more for that ID
)

// message is one control-channel packet.
type message struct {
	Type  string        `json:"type"`
	PID   int           `json:"pid,omitempty"`
	Stats *Stats        `json:"stats,omitempty"`
	Error string        `json:"error,omitempty"`
	Grace time.Duration `json:"grace,omitempty"`
	Hard  time.Duration `json:"hard,omitempty"` // msgDrain: keep busy connections this long (Grace: idle ones)

	Workers []components.WorkerStatus `json:"workers,omitempty"`

	ID        uint64            `json:"id,omitempty"`
	Purge     *components.Purge `json:"purge,omitempty"`
	Purged    int               `json:"purged,omitempty"`
	Processes int               `json:"processes,omitempty"`

	Set     string           `json:"set,omitempty"`
	Change  *admin.Change    `json:"change,omitempty"`
	State   *admin.SetState  `json:"state,omitempty"`
	Sets    []admin.SetState `json:"sets,omitempty"`
	ErrKind string           `json:"err_kind,omitempty"` // msgUpstreamDone: noset or change
	Metrics json.RawMessage  `json:"metrics,omitempty"`  // msgScraped: a metrics.Snapshot

	Secret []byte `json:"secret,omitempty"` // msgSecret; never logged
}

// Stats are a worker's counters, as its heartbeats report them
// (engine.Stats).
type Stats struct {
	Open         int64  `json:"open"`
	Accepted     uint64 `json:"accepted"`
	Requests     uint64 `json:"requests"`
	Refused      uint64 `json:"refused"`
	Panics       uint64 `json:"panics"`
	BytesWritten uint64 `json:"bytes_written"`
}

// maxMessage bounds a control packet.
const maxMessage = 64 << 10

// send writes m as one packet, with f's descriptor attached if f is not
// nil. Safe for concurrent use (one packet is one write).
func send(c *net.UnixConn, m message, f *os.File, timeout time.Duration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if f != nil {
		oob = syscall.UnixRights(int(f.Fd()))
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// receive reads one packet: the message and the file passed with it, if
// any. It returns io.EOF-like errors when the other end is gone.
func receive(c *net.UnixConn) (message, *os.File, error) {
	var m message
	buf := make([]byte, maxMessage)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return m, nil, err
	}
	if n == 0 && oobn == 0 {
		return m, nil, errors.New("control channel closed")
	}
	var f *os.File
	if oobn > 0 {
		cmsgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err == nil {
			for _, cm := range cmsgs {
				fds, err := syscall.ParseUnixRights(&cm)
				if err != nil {
					continue
				}
				for _, fd := range fds {
					if f == nil {
						f = os.NewFile(uintptr(fd), "probe")
					} else {
						syscall.Close(fd)
					}
				}
			}
		}
	}
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		if f != nil {
			f.Close()
		}
		return m, nil, err
	}
	return m, f, nil
}

// socketpair returns the two ends of a new Unix socket pair of type typ.
func socketpair(typ int, name string) (a, b *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, typ|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name), nil
}

// fileConn returns a net.UnixConn over f's socket; f is closed.
func fileConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a Unix socket")
	}
	return uc, nil
}
