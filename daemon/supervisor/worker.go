//go:build linux

package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/quicsteer"
	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// WorkerCommand is the hidden subcommand a master runs its own binary
// with to start a worker (see Master.Command): the program's main calls
// RunWorker when its first argument is WorkerCommand.
const WorkerCommand = "worker"

// RunWorker runs this process as a worker of a master that started it
// with the descriptors described at fdControl, and returns the exit
// status: 0 after the master told it to stop, 1 if it could not start
// (the reason sent to the master and written to stderr) or lost its
// master. Its log goes to stderr, which the master relays. stdout is
// where a component writing to "stdout" writes.
func RunWorker(stdout, stderr io.Writer) int {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	master := os.Getppid()
	ctl, err := fileConn(os.NewFile(fdControl, "control"))
	if err != nil {
		fmt.Fprintln(stderr, "sluice worker: not started by a master: no control channel:", err)
		return 1
	}
	defer ctl.Close()
	var su setup
	sf := os.NewFile(fdSetup, "setup")
	err = json.NewDecoder(sf).Decode(&su)
	sf.Close()
	if err != nil {
		fmt.Fprintln(stderr, "sluice worker: reading the setup:", err)
		return 1
	}
	procs := sizeFor(su.N)
	// The master orchestrates: a terminal's SIGINT to the process group,
	// or a SIGHUP, reaches the master, which tells the workers.
	signal.Ignore(os.Interrupt, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	view := &workersView{self: su.ID}
	var caches atomic.Pointer[components.Caches]
	purges := newPurgeClient(ctl)
	scrapes := newScrapeClient(ctl, su.ID)
	srv := &daemon.Server{
		Name:           su.Name,
		Grace:          su.Grace,
		Stdout:         stdout,
		Stderr:         stderr,
		Logger:         logger,
		SetSlogDefault: true,
		ACMECacheOnly:  true, // the master obtains the certificates
		HTTP3ReusePort: true, // where the master gives no UDP socket, each worker binds its own (docs/http3.md)
		QUICSecret:     su.QUICSecret,
		HTTP3Socket: func(a config.Address) (*net.UDPConn, error) {
			i := slices.Index(su.H3Addrs, a)
			if i < 0 {
				return nil, nil
			}
			f := os.NewFile(uintptr(fdListeners+len(su.Addrs)+i), "udp "+a.String())
			defer f.Close()
			pc, err := net.FilePacketConn(f)
			if err != nil {
				return nil, err
			}
			uc, ok := pc.(*net.UDPConn)
			if !ok {
				pc.Close()
				return nil, fmt.Errorf("the socket for %s is not a UDP one", a)
			}
			return uc, nil
		},
		Load: func(ctx components.Context) (*config.Config, error) {
			ctx.Workers = view.get
			ctx.Metrics = scrapes.collect
			// Purges reach every worker's caches through the master.
			ctx.Caches = new(components.Caches)
			ctx.Caches.SetRelay(purges.relay)
			caches.Store(ctx.Caches)
			ctx.Processes = su.N
			cfg, err := (&config.Loader{Context: ctx}).Parse(su.Name, su.Config)
			if err != nil {
				return nil, err
			}
			cfg.Listen, cfg.ListenOptions = su.Addrs, listenOptions(cfg, su.Addrs)
			cfg.PidFile = ""          // the master's
			cfg.Log.Output = "stderr" // relayed by the master, with worker=ID
			cfg.Warnings = nil        // the master logged them
			// Before the first request: the sets the config just
			// registered take the changes made through the admin API.
			applyOverrides(su.Upstreams, logger)
			return cfg, nil
		},
		Listen: func(a config.Address) (net.Listener, error) {
			i := slices.Index(su.Addrs, a)
			if i < 0 {
				return nil, fmt.Errorf("no inherited socket for %s", a)
			}
			f := os.NewFile(uintptr(fdListeners+i), a.String())
			defer f.Close()
			return sock.FileListener(f)
		},
	}
	if len(su.H3Addrs) > 0 {
		srv.QUICConnectionIDs = quicsteer.Generator{Tag: su.Tag} // the master steers by it
	}
	if err := srv.Start(); err != nil {
		msg := err.Error()
		var le *daemon.LoadError
		if errors.As(err, &le) {
			msg = "invalid config: " + msg
		}
		fmt.Fprintln(stderr, "sluice worker:", msg)
		send(ctl, message{Type: msgError, Error: msg}, nil, time.Second)
		return 1
	}
	// Start switched to the config's user, if it names one, which clears
	// the parent-death signal: set it again, then make sure the master
	// did not die meanwhile.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
	if os.Getppid() != master {
		logger.Error("the master is gone; exiting")
		srv.Shutdown(expired())
		return 1
	}
	logger.Info("sized for the workers", "workers", su.N, "gomaxprocs", procs, "file_caches", fmt.Sprintf("1/%d of the defaults", max(1, su.N)))
	toMaster := func(m message) { send(ctl, m, nil, time.Second) }
	probes := newConnListener()
	srv.ServeProbes(probes)
	if err := send(ctl, message{Type: msgReady, PID: os.Getpid()}, nil, su.Health.Timeout); err != nil {
		srv.Shutdown(expired())
		return 1
	}

	stop := make(chan message, 4)
	go func() { // the master's messages
		for {
			m, f, err := receive(ctl)
			if err != nil {
				stop <- message{} // the master is gone
				return
			}
			switch m.Type {
			case msgProbe:
				if f != nil {
					if c, err := net.FileConn(f); err == nil {
						probes.push(c)
					}
					f.Close()
				}
			case msgReopen:
				srv.ReopenLogs()
			case msgView:
				view.all.Store(&m.Workers)
			case msgPurge:
				if m.Purge != nil {
					go applyPurge(ctl, &caches, m)
				}
			case msgPurged:
				purges.answer(m)
			case msgUpstream:
				if m.Change != nil {
					go applyUpstream(toMaster, m)
				}
			case msgUpstreams:
				go toMaster(message{Type: msgUpstreamsDone, ID: m.ID, Sets: admin.LocalSets().List()})
			case msgScrape:
				go answerScrape(ctl, su.ID, m.ID)
			case msgScraped:
				scrapes.answer(m)
			case msgStop, msgDrain:
				// Read on: a draining worker still takes purges, and a
				// stop that ends its drain.
				select {
				case stop <- m:
				default:
				}
			}
		}
	}()
	beat := time.NewTicker(su.Health.Interval)
	defer beat.Stop()
	var ended chan struct{} // closed when a drain or stop has ended
	var endNow func()       // ends the drain or stop under way, cutting what is left
	var endIn = func(time.Duration) {}
	for {
		select {
		case <-beat.C:
			// A draining worker beats too: the master's status page
			// shows what it still holds.
			s := srv.Stats()
			send(ctl, message{Type: msgBeat, Stats: &Stats{
				Open: s.Open, Accepted: s.Accepted, Requests: s.Requests,
				Refused: s.Refused, Panics: s.Panics, BytesWritten: s.BytesWritten,
			}}, nil, su.Health.Timeout)
		case <-term:
			if ended != nil {
				endIn(su.Grace)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), su.Grace)
			srv.Shutdown(ctx)
			cancel()
			return 0
		case m := <-stop:
			switch {
			case m.Type == "" && ended != nil:
				logger.Error("the master is gone; ending the drain")
				endNow()
				continue
			case m.Type == "":
				logger.Error("the master is gone; exiting")
				srv.Shutdown(expired())
				return 1
			case ended != nil:
				// A stop while draining (the master stops): what is
				// left gets the grace period.
				endIn(m.Grace)
				continue
			}
			// Accept nothing more, and say so: the master answers an
			// admin API load once the old workers have, so that a
			// client's next connection reaches the new config.
			srv.StopAccepting()
			toMaster(message{Type: msgClosed})
			bound := m.Grace
			if m.Type == msgDrain && m.Hard > 0 {
				bound = max(m.Hard, m.Grace)
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			ended, endNow = make(chan struct{}), cancel
			endIn = func(d time.Duration) { time.AfterFunc(d, cancel) }
			go func(m message) {
				defer close(ended)
				switch {
				case m.Type == msgDrain && m.Hard > 0:
					srv.DrainBusy(ctx, m.Grace)
				case m.Type == msgDrain:
					srv.Drain(ctx)
				default:
					srv.Shutdown(ctx)
				}
			}(m)
		case <-ended:
			endNow()
			return 0
		}
	}
}

// listenOptions returns the listen options of cfg (as the worker parsed
// it) for the master's addresses: an address's own, or, for an address
// the master opened with port 0 and the config now names with the port
// it got (a reload keeps the socket), those of the config's address in
// the same place. An address only the master knows (sluice serve
// --listen) has none, as without workers.
func listenOptions(cfg *config.Config, addrs []config.Address) map[config.Address]*config.ListenOptions {
	opts := map[config.Address]*config.ListenOptions{}
	for i, a := range addrs {
		if o := cfg.ListenOptions[a]; o != nil {
			opts[a] = o
			continue
		}
		if i >= len(cfg.Listen) || cfg.Listen[i].Network != "tcp" || a.Network != "tcp" {
			continue
		}
		host, port, err := net.SplitHostPort(a.Addr)
		chost, _, cerr := net.SplitHostPort(cfg.Listen[i].Addr)
		if err == nil && cerr == nil && port == "0" && host == chost {
			if o := cfg.ListenOptions[cfg.Listen[i]]; o != nil {
				opts[a] = o
			}
		}
	}
	return opts
}

// sizeFor sets GOMAXPROCS for one of n workers sharing the machine, unless
// the GOMAXPROCS environment variable sets it: the runtime's default (the
// CPUs this process may use) divided by n, at least 1. It returns the
// value in force.
func sizeFor(n int) int {
	if os.Getenv("GOMAXPROCS") != "" || n < 2 {
		return runtime.GOMAXPROCS(0)
	}
	p := max(1, runtime.GOMAXPROCS(0)/n)
	runtime.GOMAXPROCS(p)
	return p
}

// workersView is what the master last said of its workers
// (msgView), for the status page.
type workersView struct {
	self int
	all  atomic.Pointer[[]components.WorkerStatus]
}

// get is components.Context.Workers. Safe for concurrent use.
func (v *workersView) get() components.Workers {
	ws := components.Workers{Self: v.self}
	if all := v.all.Load(); all != nil {
		ws.All = *all
	}
	return ws
}

// expired returns a context that is already done.
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// connListener is a net.Listener whose connections are pushed to it: the
// master's probes.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener() *connListener {
	return &connListener{conns: make(chan net.Conn, 4), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	default:
		c.Close() // the engine is not accepting: the probe fails
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return probeAddr{} }

type probeAddr struct{}

func (probeAddr) Network() string { return "unix" }
func (probeAddr) String() string  { return "health-probe" }
