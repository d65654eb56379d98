// Command burst measures what a burst of first requests leaves in a
// server's resident memory. It starts the server afresh on core 1 (Sluice
// from a config file serving the page, and nginx with one worker as
// bench/peers runs it; both admit 20,000 connections and keep idle ones
// for minutes, so neither closes one during the run), opens --conns
// connections that send nothing yet, then sends one GET of the 151-byte
// page on every one of them at once, waits for every answer, and reads the
// server's resident set (VmRSS, summed over its process tree) --settle
// after the last one. It reports the growth of the resident set since
// before the connections opened, divided by the connections ("burst
// B/c"; "open B/c" is the growth once they are open, before the burst);
// then every connection sends one more request, at once again, and must
// be answered, which shows that none was dropped. Beside the memory it
// reports the server's CPU time (utime and stime, /proc, in ticks of
// 10 ms) over the burst, from its last answer to the RSS reading, and
// over the second burst: what returning memory after a burst costs.
//
// --fresh opens all the connections at once instead, each sending its
// request as it opens: a burst of new connections. --upstream-delay D
// serves the page through each server's proxy (Sluice's proxy source,
// bench/peers' nginx-proxy) from an upstream of this command's own that
// answers after D: a burst of handlers that block.
//
// This differs from the harness's idle scenario (bench, scenario idle),
// which opens the connections 500 at a time, each making its request as
// it opens: there the server serves a few hundred requests at once, here
// all of them, as after a network partition heals or when a load balancer
// sends a server every client at once.
//
// The client runs on core 0 and the descriptor limit is raised to the
// hard one (servers inherit it); the clients bind to source addresses
// spread over 127.0.0.0/8, so the ephemeral ports do not run out across
// runs. It is a memory measurement: a few runs, not a CPU benchmark. From
// the repository root:
//
//	go build -o /tmp/sluice ./cmd/sluice
//	go -C bench run ./cmd/burst --sluice /tmp/sluice --conns 10000
//	go -C bench run ./cmd/burst --sluice /tmp/sluice --upstream-delay 20ms
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
)

// page is the document every server serves: 151 bytes, as in the
// harness's keep-alive scenario.
var page = append(bytes.Repeat([]byte("x"), 150), '\n')

type options struct {
	sluice, servers string
	conns, rounds   int
	par             int
	settle          time.Duration
	keep, fresh     bool
	cpus            string
	delay           time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.sluice, "sluice", "", "the sluice `BINARY` (required for the sluice server)")
	flag.StringVar(&o.servers, "servers", "sluice,nginx", "servers to measure, in order (bench/peers names)")
	flag.IntVar(&o.conns, "conns", 10000, "connections in the burst")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds (every server in each)")
	flag.IntVar(&o.par, "par", 64, "connections opened at a time")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "wait after the last answer before reading the RSS")
	flag.BoolVar(&o.fresh, "fresh", false, "open every connection at once and send its request as soon as it is open, "+
		"rather than opening them all first: a burst of new connections, not of parked ones (RSS open is then not read)")
	flag.DurationVar(&o.delay, "upstream-delay", 0, "if set, the servers proxy every request to an upstream (this command's own, on core 0) "+
		"that answers the page after this long: handlers that block, as a proxy's do (Sluice's proxy source, bench/peers' nginx-proxy)")
	flag.StringVar(&o.cpus, "cpus", "1", "the CPUs the server runs on (taskset -c); the client runs on core 0")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory (the servers' configurations and logs) and print its name")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "burst:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	nofile := machine.RaiseNofile()
	if nofile < o.conns+100 {
		return fmt.Errorf("%d connections need %d descriptors; the limit is %d", o.conns, o.conns+100, nofile)
	}
	if runtime.NumCPU() >= 2 {
		machine.Pin(0) // the client on core 0, the servers having core 1
	}
	dir, err := os.MkdirTemp("", "burst")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Printf("# scratch directory %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	os.Chmod(dir, 0o755)
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "index.html"), page, 0o644); err != nil {
		return err
	}
	sluice := o.sluice
	if sluice != "" {
		if sluice, err = filepath.Abs(sluice); err != nil {
			return err
		}
	}

	upstream := ""
	if o.delay > 0 {
		if upstream, err = startUpstream(o.delay); err != nil {
			return err
		}
	}
	what := "the page"
	if upstream != "" {
		what = fmt.Sprintf("the page through a proxy, the upstream answering after %s", o.delay)
	}
	fmt.Printf("# a burst of %d first requests for %s, RSS %s after the last answer, %s\n", o.conns, what, o.settle, time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-6s %-8s %12s %12s %12s %10s %10s %10s %10s %9s %9s %9s\n", "round", "server", "RSS before", "RSS open", "RSS after",
		"open B/c", "burst B/c", "answered", "again", "CPU burst", "CPU after", "CPU again")
	for round := 1; round <= o.rounds; round++ {
		for i, name := range strings.Split(o.servers, ",") {
			env := peers.Env{Dir: filepath.Join(dir, fmt.Sprintf("%s-%d-%d", name, round, i)), Root: root,
				Host: "127.0.0.1", NoFile: nofile, Sluice: sluice, Upstream: upstream, IdleConns: 100, Body: string(page)}
			r, err := measure(o, name, env)
			if err != nil {
				fmt.Printf("%-6d %-8s error: %v\n", round, name, err)
				continue
			}
			n := float64(o.conns)
			ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
			fmt.Printf("%-6d %-8s %12d %12d %12d %10.0f %10.0f %10d %10d %9s %9s %9s\n", round, name, r.before, r.open, r.after,
				float64(r.open-r.before)/n, float64(r.after-r.before)/n, r.answered, r.again, ms(r.cpuBurst), ms(r.cpuSettle), ms(r.cpuAgain))
			if r.err != nil {
				fmt.Printf("       first failure: %v\n", r.err)
			}
		}
	}
	return nil
}

// result is one run's figures.
type result struct {
	before, open, after int64 // the server's RSS before the connections, with them open, after the burst
	answered, again     int   // connections answered in the burst, and again after it
	err                 error // the first failure, if any

	// The server's CPU time (user and system, its process tree) from the
	// burst's first request to its last answer, from then until RSS
	// after is read, and over the second burst.
	cpuBurst, cpuSettle, cpuAgain time.Duration
}

func measure(o options, name string, env peers.Env) (result, error) {
	var r result
	port, err := machine.FreePort()
	if err != nil {
		return r, err
	}
	env.Port = port
	srv, err := start(name, env, o.cpus)
	if err != nil {
		return r, err
	}
	defer srv.Stop()
	addr := env.Addr()
	// A few requests first, so that lazily made state exists.
	for range 20 {
		c, err := open(addr)
		if err != nil {
			return r, err
		}
		err = c.get()
		c.nc.Close()
		if err != nil {
			return r, err
		}
	}
	time.Sleep(time.Second)
	if r.before, err = rss(srv); err != nil {
		return r, err
	}
	conns := make([]*client, o.conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.nc.Close()
			}
		}
	}()
	var cpu [4]time.Duration
	if o.fresh {
		cpu[0] = cpuTime(srv)
		r.answered, r.err = burst(conns, addr)
	} else {
		if err := each(o.par, len(conns), func(i int) error {
			c, err := open(addr)
			conns[i] = c
			return err
		}); err != nil {
			return r, fmt.Errorf("opening the connections: %v", err)
		}
		time.Sleep(time.Second) // for the server to take them all in
		if r.open, err = rss(srv); err != nil {
			return r, err
		}
		cpu[0] = cpuTime(srv)
		r.answered, r.err = burst(conns, "")
	}
	cpu[1] = cpuTime(srv)
	time.Sleep(o.settle)
	if r.after, err = rss(srv); err != nil {
		return r, err
	}
	cpu[2] = cpuTime(srv)
	var again error
	r.again, again = burst(conns, "")
	cpu[3] = cpuTime(srv)
	r.cpuBurst, r.cpuSettle, r.cpuAgain = cpu[1]-cpu[0], cpu[2]-cpu[1], cpu[3]-cpu[2]
	if r.err == nil {
		r.err = again
	}
	return r, nil
}

// burst makes one request on every connection at once, and returns how
// many were answered with the page and the first failure. If addr is
// set, each connection is opened to it first, all at once. It returns
// once every connection was answered or failed.
func burst(conns []*client, addr string) (int, error) {
	var (
		wg       sync.WaitGroup
		answered atomic.Int64
		once     sync.Once
		first    error
	)
	start := make(chan struct{})
	for i := range conns {
		wg.Go(func() {
			<-start
			if addr != "" {
				c, err := open(addr)
				if err != nil {
					once.Do(func() { first = fmt.Errorf("connection %d: %w", i, err) })
					return
				}
				conns[i] = c
			}
			c := conns[i]
			if c == nil {
				return
			}
			if err := c.get(); err != nil {
				once.Do(func() { first = fmt.Errorf("connection %d: %w", i, err) })
				return
			}
			answered.Add(1)
		})
	}
	close(start)
	wg.Wait()
	return int(answered.Load()), first
}

// client is one client connection.
type client struct {
	nc net.Conn
	br *bufio.Reader
}

// source numbers client connections, so that each binds to a fresh
// source address (those of an earlier run's connections are in
// TIME_WAIT).
var source atomic.Int64

// sourceAddr returns the next source address: 200 connections share each
// of 127.1.0.1, 127.1.0.2, ….
func sourceAddr() *net.TCPAddr {
	k := int(source.Add(1)-1) / 200
	return &net.TCPAddr{IP: net.IPv4(127, byte(1+k/(250*256)), byte(k/250%256), byte(k%250+1))}
}

// open connects to addr and sends nothing.
func open(addr string) (*client, error) {
	d := net.Dialer{LocalAddr: sourceAddr(), Timeout: time.Minute}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &client{nc: nc, br: bufio.NewReaderSize(nc, 1024)}, nil
}

// get makes a GET of the page and checks the answer: 200, the page, the
// connection kept open.
func (c *client) get() error {
	c.nc.SetDeadline(time.Now().Add(time.Minute))
	defer c.nc.SetDeadline(time.Time{})
	if _, err := io.WriteString(c.nc, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !bytes.Equal(body, page) || resp.Close {
		return fmt.Errorf("GET: %d, %d bytes, close %v", resp.StatusCode, len(body), resp.Close)
	}
	return nil
}

// each runs f(0) … f(n-1), par at a time, and returns the first error.
func each(par, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		once  sync.Once
		first error
	)
	for range par {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = fmt.Errorf("connection %d: %w", i, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// cpuTime returns the server's CPU time so far (its process tree), 0 if
// unreadable.
func cpuTime(srv *server) time.Duration {
	u, _ := peers.TreeUsage(srv.pid)
	return u.CPU
}

// sluiceConf is Sluice's configuration: the page, or the proxy to the
// upstream (as bench/peers' sluice-proxy), and idle connections kept as
// long as nginx's, 20,000 of them.
const sluiceConf = `listen: %s
limits:
  max_conns: 20000
  idle_timeout: 300s
  busy_idle_timeout: 300s
routes:
  - match: /
    pipeline:
      - %s
`

// startUpstream starts the upstream of --upstream-delay: it answers every
// request with the page after delay. It returns its address.
func startUpstream(delay time.Duration) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	}))
	return ln.Addr().String(), nil
}

// server is a running server.
type server struct {
	pid  int    // the process whose tree is measured
	Stop func() // ends the server and waits for it
}

// start starts server name (sluice, or a bench/peers peer) on the CPUs
// cpus and waits until it answers.
func start(name string, env peers.Env, cpus string) (*server, error) {
	if name != "sluice" {
		if env.Upstream != "" {
			name += "-proxy"
		}
		i := slices.IndexFunc(append(peers.All(), peers.Proxies()...), func(p peers.Peer) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown server %q", name)
		}
		srv, err := peers.Start(append(peers.All(), peers.Proxies()...)[i], env, cpus)
		if err != nil {
			return nil, err
		}
		return &server{pid: srv.Pid, Stop: srv.Stop}, nil
	}
	// Sluice with a config file rather than the peer's --root, whose
	// default limits would close idle connections at 10,000.
	if env.Sluice == "" {
		return nil, errors.New("--sluice is not set")
	}
	if err := os.MkdirAll(env.Dir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(env.Dir, "sluice.yaml")
	source := "files: " + env.Root
	if env.Upstream != "" {
		source = fmt.Sprintf(`proxy: {upstreams: ["http://%s"], max_idle_conns: %d}`, env.Upstream, env.IdleConns)
	}
	if err := os.WriteFile(conf, fmt.Appendf(nil, sluiceConf, env.Addr(), source), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", cpus, env.Sluice, "serve", "-c", conf)
	out, err := os.Create(filepath.Join(env.Dir, "output.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1") // serve as root: the config names no user
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	srv := &server{pid: cmd.Process.Pid, Stop: func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}}
	for deadline := time.Now().Add(15 * time.Second); ; {
		c, err := open(env.Addr())
		if err == nil {
			err = c.get()
			c.nc.Close()
		}
		if err == nil {
			return srv, nil
		}
		if time.Now().After(deadline) {
			srv.Stop()
			log, _ := os.ReadFile(filepath.Join(env.Dir, "output.log"))
			return nil, fmt.Errorf("sluice did not answer within 15 s (%v): %.800s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rss returns the server's resident set, summed over its process tree.
func rss(srv *server) (int64, error) {
	u, err := peers.TreeUsage(srv.pid)
	if err != nil {
		return 0, err
	}
	if u.RSS <= 0 {
		return 0, errors.New("no resident set read")
	}
	return u.RSS, nil
}
