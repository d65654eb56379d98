// Command grpcload measures what proxying gRPC costs a server: unary
// calls per second and server CPU per call through Sluice (`sluice serve
// -c`, a `proxy` with `transport: h2c`) and nginx (`grpc_pass` to an
// upstream block with keepalive), in front of one gRPC upstream, in the
// same run.
//
// The upstream is this command's own (google.golang.org/grpc, plain
// HTTP/2): one unary method, /bench.Echo/Unary, answering each message
// with itself, with a codec that passes messages as the bytes they are.
// The client is grpc-go too: --calls calls in flight in all, spread over
// --conns connections, for --duration after --warmup, each call checked
// to come back as sent. Each server is reached over a plain listener
// with prior knowledge (h2c; Sluice `h2c: true`, nginx `listen … http2`)
// and over TLS with HTTP/2 by ALPN (one ECDSA P-256 certificate from
// bench/tlscert; Sluice `tls:`, nginx `listen … ssl http2`), as --modes
// says; the upstream is plain HTTP/2 for both.
//
// Every server is started afresh for each run, pinned to --core with
// taskset (nginx with its master and one worker), and the servers take
// turns in --rounds interleaved rounds, each round starting with the
// next one. The upstream and the client run in this process, which
// should be pinned to another core: start it with taskset -c 0, so that
// the server's core is its own. Per server it reports the medians over
// rounds of calls per second, of the server's CPU per call (utime and
// stime from /proc/PID/stat of the server's processes over the run,
// divided by the calls answered; with the lowest and highest), of the
// p50 and p99 latency, and the errors of all rounds (a call that failed
// or came back different), and how busy this process kept its core. With
// --out DIR the Markdown table goes to DIR/README.md.
//
// From the repository root, on an otherwise idle machine with two cores:
//
//	go build -o /tmp/sluice ./cmd/sluice
//	taskset -c 0 go -C bench run ./cmd/grpcload --sluice /tmp/sluice --rounds 5 --out ../docs/benchmarks/grpc
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"github.com/sluice-server/sluice/bench/peers"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/tlscert"
)

// method is the one method the upstream serves.
const method = "/bench.Echo/Unary"

// options are the command's flags.
type options struct {
	sluice, nginx    string
	conns, calls     int
	size             int
	duration, warmup time.Duration
	timeout          time.Duration
	rounds           int
	core             string
	modes            []string
	out              string
}

func main() {
	var o options
	var modes string
	flag.StringVar(&o.sluice, "sluice", "", "the sluice `binary` (required)")
	flag.StringVar(&o.nginx, "nginx", "nginx", "the nginx `binary`; empty: Sluice alone")
	flag.IntVar(&o.conns, "conns", 10, "client connections to the server")
	flag.IntVar(&o.calls, "calls", 50, "unary calls in flight in all, spread over the connections")
	flag.IntVar(&o.size, "size", 256, "`bytes` of each request message (the answer is the same)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each measured run lasts")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured run")
	flag.DurationVar(&o.timeout, "timeout", 0, "a deadline for each call, sent as grpc-timeout (0: none)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, servers interleaved")
	flag.StringVar(&o.core, "core", "1", "the CPU list the servers run on (taskset -c)")
	flag.StringVar(&modes, "modes", "h2c,tls", "how clients reach the servers: h2c (prior knowledge), tls (HTTP/2 by ALPN), or both")
	flag.StringVar(&o.out, "out", "", "a `directory` to write README.md into (default: stdout only)")
	flag.Parse()
	o.modes = strings.Split(modes, ",")
	if o.sluice == "" {
		fmt.Fprintln(os.Stderr, "grpcload: --sluice BINARY is required")
		os.Exit(2)
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(2)
	}
	args := append([]string{"go -C bench run ./cmd/grpcload"}, os.Args[1:]...)
	if affinityNote(o.core) == "" {
		args[0] = "taskset -c " + clientCPUs() + " " + args[0]
	}
	if _, err := run(o, strings.Join(args, " ")); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

// check refuses options that cannot be run.
func (o options) check() error {
	if o.conns < 1 || o.calls < o.conns {
		return fmt.Errorf("--conns %d, --calls %d: want at least one connection and a call in flight on each", o.conns, o.calls)
	}
	if o.size < 0 || o.rounds < 1 || o.duration <= 0 {
		return errors.New("--size, --rounds and --duration must be positive")
	}
	if _, err := cpuList(o.core); err != nil {
		return fmt.Errorf("--core: %w", err)
	}
	for _, m := range o.modes {
		if m != "h2c" && m != "tls" {
			return fmt.Errorf("--modes: unknown mode %q; write h2c, tls or h2c,tls", m)
		}
	}
	return nil
}

// rawCodec passes messages as the bytes they are (a *[]byte), so that no
// generated protobuf code is needed.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append((*v.(*[]byte))[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Uint64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// upstream starts the gRPC echo upstream on a loopback port and returns
// its address and a count of the connections it accepted.
func upstream() (string, *atomic.Uint64, func(), error) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	accepted := new(atomic.Uint64)
	l := countingListener{tl, accepted}
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	unary := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in []byte
		if err := dec(&in); err != nil {
			return nil, err
		}
		return &in, nil
	}
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "bench.Echo",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Unary", Handler: unary}},
	}, nil)
	go s.Serve(l)
	return l.Addr().String(), accepted, s.Stop, nil
}

// server is one server under test, reached in one mode.
type server struct {
	name, mode string
	version    func() string
	// start writes the server's config into dir and returns the command
	// serving port, in front of the upstream at up.
	start func(dir string, port int, up string) (*exec.Cmd, error)
}

// env is what every server of a run shares.
type env struct {
	o         options
	cert, key string
	pool      *x509.CertPool
	// accepted counts the upstream's connections.
	accepted *atomic.Uint64
}

func (e env) servers() []server {
	var ss []server
	nginx := ""
	if e.o.nginx != "" {
		if p, err := exec.LookPath(e.o.nginx); err != nil {
			fmt.Fprintf(os.Stderr, "nginx: %v; Sluice alone\n", err)
		} else {
			nginx = p
		}
	}
	for _, mode := range e.o.modes {
		ss = append(ss, server{name: "sluice", mode: mode, version: func() string { return firstLine(e.o.sluice, "version") }, start: func(dir string, port int, up string) (*exec.Cmd, error) {
			conf := filepath.Join(dir, "sluice.yaml")
			if err := os.WriteFile(conf, []byte(e.sluiceConf(mode, port, up)), 0o644); err != nil {
				return nil, err
			}
			cmd := exec.Command("taskset", "-c", e.o.core, e.o.sluice, "serve", "-c", conf)
			// Run as root (as this tool often is), sluice refuses a
			// config without user: unless told so.
			cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1")
			return cmd, nil
		}})
		if nginx == "" {
			continue
		}
		ss = append(ss, server{name: "nginx", mode: mode, version: func() string { return strings.TrimPrefix(firstLine(nginx, "-v"), "nginx version: ") }, start: func(dir string, port int, up string) (*exec.Cmd, error) {
			conf := filepath.Join(dir, "nginx.conf")
			if err := os.WriteFile(conf, []byte(e.nginxConf(mode, dir, port, up)), 0o644); err != nil {
				return nil, err
			}
			return exec.Command("taskset", "-c", e.o.core, nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")), nil
		}})
	}
	return ss
}

// sluiceConf is Sluice's config: one listener, one route proxying every
// call to the upstream over h2c.
func (e env) sluiceConf(mode string, port int, up string) string {
	listen := fmt.Sprintf("{address: \"127.0.0.1:%d\", h2c: true}", port)
	if mode == "tls" {
		listen = fmt.Sprintf("{address: \"127.0.0.1:%d\", tls: {cert: %q, key: %q}}", port, e.cert, e.key)
	}
	return fmt.Sprintf("listen:\n  - %s\nroutes:\n  - match: /\n    pipeline:\n      - proxy: {upstreams: [\"http://%s\"], transport: h2c}\n", listen, up)
}

// nginxConf is nginx's: a master and one worker, no access log, client
// connections kept for any run's calls, and grpc_pass to an upstream
// block keeping more idle connections than there are calls in flight
// (nginx sends one call at a time on an upstream connection).
func (e env) nginxConf(mode, dir string, port int, up string) string {
	listen := fmt.Sprintf("listen 127.0.0.1:%d http2;", port)
	if mode == "tls" {
		listen = fmt.Sprintf("listen 127.0.0.1:%d ssl http2; ssl_certificate %s; ssl_certificate_key %s; ssl_protocols TLSv1.2 TLSv1.3;", port, e.cert, e.key)
	}
	keep := max(32, 2*e.o.calls)
	return fmt.Sprintf(`daemon off; master_process on; worker_processes 1; pid %[1]s/nginx.pid; error_log %[1]s/error.log warn;
events { worker_connections %[5]d; use epoll; }
http {
  access_log off; tcp_nodelay on; keepalive_timeout 300s; keepalive_requests 1000000000;
  client_body_temp_path %[1]s/cb; proxy_temp_path %[1]s/p; fastcgi_temp_path %[1]s/f; uwsgi_temp_path %[1]s/u; scgi_temp_path %[1]s/s;
  upstream grpcup { server %[3]s; keepalive %[4]d; keepalive_requests 1000000000; keepalive_timeout 300s; }
  server { %[2]s
    location / { grpc_pass grpc://grpcup; } }
}
`, dir, listen, up, keep, 4*keep+4*e.o.conns+64)
}

// result is one measured run.
type result struct {
	calls, errs uint64
	firstErr    string
	secs        float64
	cpuUS       float64 // server CPU-µs per call
	p50, p99    time.Duration
	clientBusy  float64 // this process's CPU over the run ÷ the run's time
	upConns     uint64  // connections the upstream accepted during the run
}

func (r result) rate() float64 { return float64(r.calls) / r.secs }

func (r result) String() string {
	s := fmt.Sprintf("%8.0f calls/s  %6.1f CPU-µs/call  p50 %v  p99 %v  %d errors  client %.0f%%  %d new upstream conns", r.rate(), r.cpuUS, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.errs, 100*r.clientBusy, r.upConns)
	if r.firstErr != "" {
		s += " (first: " + r.firstErr + ")"
	}
	return s
}

// summary is a server's results over the rounds.
type summary struct {
	name, mode, version string
	runs                []result
}

// median returns the medians of the rounds' figures, the errors summed.
func (s summary) median() result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(s.runs))
		for i, r := range s.runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	var m result
	for _, r := range s.runs {
		m.errs += r.errs
		if m.firstErr == "" {
			m.firstErr = r.firstErr
		}
	}
	m.secs = 1
	m.calls = uint64(pick(result.rate))
	m.cpuUS = pick(func(r result) float64 { return r.cpuUS })
	m.p50 = time.Duration(pick(func(r result) float64 { return float64(r.p50) }))
	m.p99 = time.Duration(pick(func(r result) float64 { return float64(r.p99) }))
	m.clientBusy = pick(func(r result) float64 { return r.clientBusy })
	m.upConns = uint64(pick(func(r result) float64 { return float64(r.upConns) }))
	return m
}

// cpuRange returns the lowest and highest CPU per call over the rounds.
func (s summary) cpuRange() (lo, hi float64) {
	lo, hi = s.runs[0].cpuUS, s.runs[0].cpuUS
	for _, r := range s.runs {
		lo, hi = min(lo, r.cpuUS), max(hi, r.cpuUS)
	}
	return lo, hi
}

// run measures every server in o.rounds rounds and prints (and with
// o.out writes) the table; command is the command line it names.
func run(o options, command string) ([]summary, error) {
	dir, err := os.MkdirTemp("", "grpcload")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// nginx's worker, started as root, runs as nobody.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	e := env{o: o, cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem")}
	if err := tlscert.Write(e.cert, e.key); err != nil {
		return nil, err
	}
	if e.pool, err = tlscert.Pool(e.cert); err != nil {
		return nil, err
	}
	up, accepted, stop, err := upstream()
	if err != nil {
		return nil, err
	}
	e.accepted = accepted
	defer stop()
	if note := affinityNote(o.core); note != "" {
		fmt.Fprintln(os.Stderr, "grpcload:", note)
	}
	ss := e.servers()
	sums := make([]summary, len(ss))
	for i, s := range ss {
		sums[i] = summary{name: s.name, mode: s.mode, version: s.version()}
	}
	for r := range o.rounds {
		for k := range ss {
			i := (k + r) % len(ss)
			res, err := e.measure(ss[i], up)
			if err != nil {
				return nil, fmt.Errorf("%s %s, round %d: %w", ss[i].name, ss[i].mode, r+1, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-6s %-3s %s\n", r+1, ss[i].name, ss[i].mode, res)
			sums[i].runs = append(sums[i].runs, res)
		}
	}
	table := report(o, command, sums)
	fmt.Print(table)
	if o.out == "" {
		return sums, nil
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	return sums, os.WriteFile(filepath.Join(o.out, "README.md"), []byte(table), 0o644)
}

// measure starts s afresh, checks one call, warms it up and measures it.
func (e env) measure(s server, up string) (result, error) {
	port, err := machine.FreePort()
	if err != nil {
		return result{}, err
	}
	dir, err := os.MkdirTemp("", "grpcload-"+s.name)
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return result{}, err
	}
	cmd, err := s.start(dir, port, up)
	if err != nil {
		return result{}, err
	}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	creds := insecure.NewCredentials()
	if s.mode == "tls" {
		creds = credentials.NewTLS(&tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})
	}
	conns := make([]*grpc.ClientConn, e.o.conns)
	for i := range conns {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
		if err != nil {
			return result{}, err
		}
		defer cc.Close()
		conns[i] = cc
	}
	if err := waitServing(conns, cmd); err != nil {
		nginxLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return result{}, fmt.Errorf("%w\n%s%s", err, log.String(), nginxLog)
	}
	msg := bytes.Repeat([]byte("x"), e.o.size)
	if e.o.warmup > 0 {
		load(conns, e.o.calls, msg, e.o.warmup, e.o.timeout)
	}
	pid := cmd.Process.Pid
	before, err := treeTicks(pid)
	if err != nil {
		return result{}, err
	}
	selfBefore, err := ticks(os.Getpid())
	if err != nil {
		return result{}, err
	}
	upBefore := e.accepted.Load()
	start := time.Now()
	res := load(conns, e.o.calls, msg, e.o.duration, e.o.timeout)
	res.secs = time.Since(start).Seconds()
	res.upConns = e.accepted.Load() - upBefore
	after, err := treeTicks(pid)
	if err != nil {
		return result{}, err
	}
	selfAfter, err := ticks(os.Getpid())
	if err != nil {
		return result{}, err
	}
	if res.calls > 0 {
		res.cpuUS = float64(after-before) * 1e6 / clockTicks / float64(res.calls)
	}
	res.clientBusy = float64(selfAfter-selfBefore) / clockTicks / res.secs
	return res, nil
}

// waitServing makes one call on each connection until they all answer,
// for at most 20 seconds or until the server exits.
func waitServing(conns []*grpc.ClientConn, cmd *exec.Cmd) error {
	deadline := time.Now().Add(20 * time.Second)
	msg := []byte("ready")
	for _, cc := range conns {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			var out []byte
			err := cc.Invoke(ctx, method, &msg, &out)
			cancel()
			if err == nil && bytes.Equal(out, msg) {
				break
			}
			if err == nil {
				err = fmt.Errorf("answered %q, want %q", out, msg)
			}
			if time.Now().After(deadline) || exited(cmd) {
				return fmt.Errorf("no answer to %s: %v", method, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// exited reports whether cmd's process is gone (or a zombie).
func exited(cmd *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// load keeps calls unary calls in flight over conns (call i on
// connection i mod len(conns)) for d, and returns the calls answered
// with msg, the others, and the latency percentiles of the answered.
func load(conns []*grpc.ClientConn, calls int, msg []byte, d, timeout time.Duration) result {
	stop := time.Now().Add(d)
	// A call still waiting well past the end fails rather than hangs;
	// no deadline is set on the calls unless asked (gRPC sends one as
	// grpc-timeout, which is work for the proxy).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := time.AfterFunc(d+10*time.Second, cancel)
	defer t.Stop()
	type worker struct {
		lat      []time.Duration
		errs     uint64
		firstErr string
	}
	ws := make([]worker, calls)
	var wg sync.WaitGroup
	for i := range ws {
		w, cc := &ws[i], conns[i%len(conns)]
		w.lat = make([]time.Duration, 0, 1024)
		wg.Go(func() {
			var out []byte
			for time.Now().Before(stop) {
				cctx, ccancel := ctx, context.CancelFunc(func() {})
				if timeout > 0 {
					cctx, ccancel = context.WithTimeout(ctx, timeout)
				}
				t0 := time.Now()
				err := cc.Invoke(cctx, method, &msg, &out)
				el := time.Since(t0)
				ccancel()
				if err == nil && !bytes.Equal(out, msg) {
					err = fmt.Errorf("answer of %d bytes differs from the %d sent", len(out), len(msg))
				}
				if err != nil {
					w.errs++
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
					continue
				}
				w.lat = append(w.lat, el)
			}
		})
	}
	wg.Wait()
	var r result
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
		r.errs += w.errs
		if r.firstErr == "" {
			r.firstErr = w.firstErr
		}
	}
	r.calls = uint64(len(all))
	if len(all) > 0 {
		slices.Sort(all)
		r.p50 = all[len(all)/2]
		r.p99 = all[min(len(all)-1, len(all)*99/100)]
	}
	return r
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times on Linux.
const clockTicks = 100

// ticks returns utime+stime of process pid (peers.ProcTicks).
func ticks(pid int) (uint64, error) { return peers.ProcTicks(pid, false) }

// treeTicks returns utime+stime of pid and of its descendants (nginx's
// worker, Sluice's workers if it has any).
func treeTicks(pid int) (uint64, error) {
	sum, err := ticks(pid)
	if err != nil {
		return 0, err
	}
	for _, c := range descendants(pid) {
		if n, err := ticks(c); err == nil { // one may just have exited
			sum += n
		}
	}
	return sum, nil
}

// descendants lists the processes below pid, from their parents in
// /proc/*/stat.
func descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				parent[p] = pp
			}
		}
	}
	var out []int
	below := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if below[pp] && !below[p] {
				below[p] = true
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}

// affinityNote says what is wrong with this process's CPUs: sharing the
// servers' core, or not pinned at all; "" when it is pinned apart.
func affinityNote(core string) string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	cpus, err := cpuList(core)
	if err != nil {
		return ""
	}
	for _, n := range cpus {
		if set.IsSet(n) {
			return fmt.Sprintf("this process may run on CPU %d, the servers' (--core %s): start it with taskset -c 0 so that the server's core is its own", n, core)
		}
	}
	return ""
}

// maxCPU bounds the CPU numbers cpuList accepts (those of unix.CPUSet).
const maxCPU = 1023

// cpuList parses a taskset CPU list ("1", "0,2", "0-3,6") into CPU
// numbers, in the order written.
func cpuList(s string) ([]int, error) {
	var cpus []int
	for f := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxCPU {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number (0 to %d); write e.g. 1, 0,2 or 2-3", s, lo, maxCPU)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxCPU {
				return nil, fmt.Errorf("CPU list %q: %q is not a range of CPUs; write LOW-HIGH, e.g. 2-3", s, f)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// clientCPUs lists the CPUs this process may run on ("0", "0,1").
func clientCPUs() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "unknown"
	}
	var cpus []string
	for n := range 1024 {
		if set.IsSet(n) {
			cpus = append(cpus, strconv.Itoa(n))
		}
	}
	return strings.Join(cpus, ",")
}

// report is the Markdown table of the run.
func report(o options, command string, sums []summary) string {
	var b strings.Builder
	b.WriteString("# gRPC unary calls through a proxy: Sluice and nginx\n\n")
	fmt.Fprintf(&b, "Produced by `%s` at commit %s. ", command, commit())
	fmt.Fprintf(&b, "A unary echo of %d bytes each way, %d calls in flight over %d connections (grpc-go), %v per run after %v of warm-up, rounds: %d, the servers interleaved; ", o.size, o.calls, o.conns, o.duration, o.warmup, o.rounds)
	if o.timeout > 0 {
		fmt.Fprintf(&b, "each call with a deadline of %v (grpc-timeout); ", o.timeout)
	}
	fmt.Fprintf(&b, "each server started afresh for each run on CPU %s, the client and the gRPC upstream (grpc-go, plain HTTP/2) in one process on CPU %s. ", o.core, clientCPUs())
	b.WriteString("Sluice: `proxy: {upstreams: [...], transport: h2c}`, its other options at their defaults, behind an `h2c: true` listener or a TLS one. ")
	b.WriteString("nginx: one worker, `grpc_pass` to an upstream block with `keepalive`, behind `listen … http2` or `listen … ssl http2`. ")
	b.WriteString("CPU per call is utime+stime of the server's processes (nginx: master and worker) from /proc/PID/stat over the run, divided by the calls answered; figures are medians over the rounds, CPU with the lowest and highest; errors are summed over the rounds; client CPU is how busy the client's process kept its core; new upstream connections are those the upstream accepted during a measured run (after the warm-up, a proxy that keeps its connections opens none).\n\n")
	b.WriteString("| server | version | client to server | calls/s | CPU-µs per call (min–max) | p50 | p99 | errors | client CPU | new upstream connections |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range sums {
		m := s.median()
		lo, hi := s.cpuRange()
		mode := "h2c (prior knowledge)"
		if s.mode == "tls" {
			mode = "TLS, HTTP/2 by ALPN"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | **%.1f** (%.1f–%.1f) | %s | %s | %d | %.0f%% | %d |\n",
			s.name, s.version, mode, m.rate(), m.cpuUS, lo, hi, ms(m.p50), ms(m.p99), m.errs, 100*m.clientBusy, m.upConns)
	}
	var ratios []string
	for _, mode := range o.modes {
		var sl, ng *summary
		for i := range sums {
			if sums[i].mode == mode {
				if sums[i].name == "sluice" {
					sl = &sums[i]
				} else {
					ng = &sums[i]
				}
			}
		}
		if sl != nil && ng != nil && ng.median().cpuUS > 0 {
			ratios = append(ratios, fmt.Sprintf("%s %.2f", mode, sl.median().cpuUS/ng.median().cpuUS))
		}
	}
	if len(ratios) > 0 {
		fmt.Fprintf(&b, "\nSluice's CPU per call over nginx's (at most 1 is the target): %s.\n", strings.Join(ratios, ", "))
	}
	for _, s := range sums {
		if m := s.median(); m.firstErr != "" {
			fmt.Fprintf(&b, "\n%s %s, first error: %s\n", s.name, s.mode, m.firstErr)
		}
	}
	return b.String()
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// commit names the checkout's commit, "-dirty" if it has changes.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}

// firstLine returns the first line a program prints (stdout or stderr).
func firstLine(prog string, args ...string) string {
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
