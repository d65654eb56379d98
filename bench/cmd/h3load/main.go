// Command h3load measures what HTTP/3 costs a server in CPU per request
// and in memory per idle connection: Sluice (`sluice serve -c` with one
// TLS listener and http3: true) and Caddy (Debian's caddy, HTTP/3 on,
// quic-go as Sluice), one ECDSA P-256 certificate (bench/tlscert) and one
// 151-byte page, in the same run. h2load has no HTTP/3 here, so the load
// is this command's own client, on quic-go's HTTP/3 client: --conns
// connections with --streams requests in flight on each, for --duration,
// after a second of warm-up.
//
// For each server and round it starts the server afresh on core 1
// (taskset; this client should run on core 0: start it with taskset -c
// 0), checks one GET, runs the load, and reports requests per second,
// errors (failed requests and answers other than 200 with the page) and
// the server's CPU (utime and stime of /proc/PID/stat over the run,
// the process and its children) per request. With --idle N it then opens
// N connections that each make one GET and stay open, and reports the
// growth of the server's resident set (VmRSS) divided by N.
//
// With --h2 (the default) Sluice is measured a second time in each round,
// over HTTP/2 on the same listener's TCP side (series sluice-h2), with
// the same client code on net/http's HTTP/2 transport: one connection
// per --conns with --streams requests in flight on each, so that HTTP/3's
// cost stands beside Sluice's own HTTP/2.
//
// From the repository root, on an otherwise idle machine:
//
//	go build -o /tmp/sluice ./cmd/sluice
//	taskset -c 0 go -C bench run ./cmd/h3load --sluice /tmp/sluice --rounds 3 --idle 10000
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/tlscert"
)

// page is the 151-byte page every server serves.
var page = strings.Repeat("x", 150) + "\n"

type options struct {
	sluice, caddy    string
	conns, streams   int
	duration, warmup time.Duration
	rounds, idle     int
	core             string
	h2               bool
}

func main() {
	var o options
	flag.StringVar(&o.sluice, "sluice", "", "the sluice binary (required)")
	flag.StringVar(&o.caddy, "caddy", "caddy", "the caddy binary; empty: Sluice alone")
	flag.IntVar(&o.conns, "conns", 100, "HTTP/3 connections")
	flag.IntVar(&o.streams, "streams", 10, "requests in flight on each connection")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each measured run lasts")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured run")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds, servers interleaved")
	flag.IntVar(&o.idle, "idle", 0, "idle connections for the memory measure (0: none)")
	flag.StringVar(&o.core, "core", "1", "the CPU list the servers run on (taskset -c)")
	flag.BoolVar(&o.h2, "h2", true, "measure Sluice over HTTP/2 too (series sluice-h2)")
	flag.Parse()
	if o.sluice == "" {
		fmt.Fprintln(os.Stderr, "h3load: --sluice BINARY is required")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "h3load:", err)
		os.Exit(1)
	}
}

// server is one server under test.
type server struct {
	name  string
	start func(dir string, port int) *exec.Cmd
	h2    bool // loaded over HTTP/2, not HTTP/3
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "h3load")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlscert.Write(cert, key); err != nil {
		return err
	}
	pool, err := tlscert.Pool(cert)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "root")
	os.MkdirAll(root, 0o755)
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte(page), 0o644); err != nil {
		return err
	}
	sluice := func(dir string, port int) *exec.Cmd {
		conf := filepath.Join(dir, "sluice.yaml")
		os.WriteFile(conf, fmt.Appendf(nil, "listen:\n  - {address: \"127.0.0.1:%d\", tls: {cert: %s, key: %s}, http3: true}\nroutes:\n  - match: /\n    pipeline:\n      - files: %s\n", port, cert, key, root), 0o644)
		cmd := exec.Command("taskset", "-c", o.core, o.sluice, "serve", "-c", conf)
		cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1")
		return cmd
	}
	servers := []server{{name: "sluice", start: sluice}}
	if o.h2 {
		servers = append(servers, server{name: "sluice-h2", start: sluice, h2: true})
	}
	if o.caddy != "" {
		if _, err := exec.LookPath(o.caddy); err != nil {
			fmt.Printf("caddy: %v; Sluice alone\n", err)
		} else {
			servers = append(servers, server{name: "caddy", start: func(dir string, port int) *exec.Cmd {
				conf := filepath.Join(dir, "Caddyfile")
				os.WriteFile(conf, fmt.Appendf(nil, "{\n\tadmin off\n\tauto_https off\n\tskip_install_trust\n\tdefault_sni localhost\n\tservers {\n\t\tprotocols h1 h2 h3\n\t}\n}\n\nhttps://127.0.0.1:%d {\n\ttls %s %s\n\troot * %s\n\tfile_server\n}\n", port, cert, key, root), 0o644)
				cmd := exec.Command("taskset", "-c", o.core, o.caddy, "run", "--config", conf, "--adapter", "caddyfile")
				cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
				return cmd
			}})
		}
	}
	tlsConf := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{http3.NextProtoH3}}
	results := map[string][]result{}
	for r := range o.rounds {
		for _, s := range servers {
			res, err := measure(o, s, tlsConf)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, r+1, err)
			}
			fmt.Printf("round %d %-9s %s\n", r+1, s.name, res)
			results[s.name] = append(results[s.name], res)
		}
	}
	fmt.Printf("\nmedians over %d rounds, %d connections × %d streams, %v each:\n", o.rounds, o.conns, o.streams, o.duration)
	for _, s := range servers {
		fmt.Printf("%-9s %s\n", s.name, median(results[s.name]))
	}
	return nil
}

// result is one measured run.
type result struct {
	reqs, errs uint64
	secs       float64
	cpuUS      float64 // server CPU-µs per request
	idleKiB    float64 // resident KiB per idle connection, or -1
}

func (r result) String() string {
	s := fmt.Sprintf("%8.0f req/s  %6.1f CPU-µs/req  %d errors", float64(r.reqs)/r.secs, r.cpuUS, r.errs)
	if r.idleKiB >= 0 {
		s += fmt.Sprintf("  %.1f KiB per idle connection", r.idleKiB)
	}
	return s
}

// median returns the run with the median CPU per request, its memory
// figure the median of the rounds'.
func median(rs []result) result {
	sorted := append([]result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].cpuUS < sorted[j].cpuUS })
	m := sorted[len(sorted)/2]
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].idleKiB < sorted[j].idleKiB })
	m.idleKiB = sorted[len(sorted)/2].idleKiB
	return m
}

// measure starts s afresh and measures it.
func measure(o options, s server, tlsConf *tls.Config) (result, error) {
	port, err := freePort()
	if err != nil {
		return result{}, err
	}
	dir, err := os.MkdirTemp("", "h3load-"+s.name)
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	cmd := s.start(dir, port)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	url := fmt.Sprintf("https://127.0.0.1:%d/index.html", port)
	if err := waitServing(url, tlsConf); err != nil {
		return result{}, fmt.Errorf("%w\n%s", err, log.String())
	}
	pid := cmd.Process.Pid
	load := load
	if s.h2 {
		load = load2
	}
	load(o, url, tlsConf, o.warmup)
	before, err := cpuTicks(pid)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	reqs, errs := load(o, url, tlsConf, o.duration)
	secs := time.Since(start).Seconds()
	after, err := cpuTicks(pid)
	if err != nil {
		return result{}, err
	}
	res := result{reqs: reqs, errs: errs, secs: secs, idleKiB: -1}
	if reqs > 0 {
		res.cpuUS = float64(after-before) * 1e6 / float64(clockTicks) / float64(reqs)
	}
	if o.idle > 0 && !s.h2 {
		kib, err := idleCost(o.idle, url, tlsConf, pid)
		if err != nil {
			return result{}, err
		}
		res.idleKiB = kib
	}
	return res, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times on Linux.
const clockTicks = 100

// cpuTicks returns the CPU time of process pid and of the children it
// reaped, in clock ticks (peers.ProcTicks).
func cpuTicks(pid int) (uint64, error) { return peers.ProcTicks(pid, true) }

// rssKiB returns the resident set of pid (VmRSS).
func rssKiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return n, err
		}
	}
	return 0, errors.New("no VmRSS")
}

func freePort() (int, error) {
	// A port free for TCP and UDP alike.
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("no port free for TCP and UDP")
}

// waitServing asks url over HTTP/3 until it answers the page.
func waitServing(url string, tlsConf *tls.Config) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		tr := &http3.Transport{TLSClientConfig: tlsConf}
		ok, err := get(&http.Client{Transport: tr, Timeout: time.Second}, url)
		tr.Close()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer over HTTP/3: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get asks url and reports whether it got the page.
func get(c *http.Client, url string) (bool, error) {
	resp, err := c.Get(url)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != 200 || string(b) != page {
		return false, fmt.Errorf("%d, %d bytes", resp.StatusCode, len(b))
	}
	return true, nil
}

// load runs o.conns connections with o.streams requests in flight on
// each for d, and returns the requests answered with the page and the
// others.
func load(o options, url string, tlsConf *tls.Config, d time.Duration) (reqs, errs uint64) {
	return loadWith(o, url, d, func() (*http.Client, func()) {
		tr := &http3.Transport{TLSClientConfig: tlsConf, QUICConfig: &quic.Config{MaxIncomingStreams: int64(o.streams)}}
		return &http.Client{Transport: tr}, func() { tr.Close() }
	})
}

// load2 is load over HTTP/2: o.conns connections (a transport each,
// allowed one connection) with o.streams requests in flight on each.
func load2(o options, url string, tlsConf *tls.Config, d time.Duration) (reqs, errs uint64) {
	conf := tlsConf.Clone()
	conf.NextProtos = []string{"h2"}
	return loadWith(o, url, d, func() (*http.Client, func()) {
		tr := &http.Transport{TLSClientConfig: conf, ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
		return &http.Client{Transport: tr}, tr.CloseIdleConnections
	})
}

// loadWith runs o.conns clients that newClient makes (with what closes
// each), o.streams requests in flight on each, for d.
func loadWith(o options, url string, d time.Duration, newClient func() (*http.Client, func())) (reqs, errs uint64) {
	var ok, bad atomic.Uint64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range o.conns {
		c, closeClient := newClient()
		var cw sync.WaitGroup
		for range o.streams {
			cw.Go(func() {
				for time.Now().Before(stop) {
					if good, _ := get(c, url); good {
						ok.Add(1)
					} else {
						bad.Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			cw.Wait()
			closeClient()
		})
	}
	wg.Wait()
	return ok.Load(), bad.Load()
}

// idleCost opens n connections, each making one GET and staying open,
// and returns the growth of pid's resident set per connection.
func idleCost(n int, url string, tlsConf *tls.Config, pid int) (float64, error) {
	time.Sleep(time.Second) // let the load's connections close
	before, err := rssKiB(pid)
	if err != nil {
		return 0, err
	}
	ua, err := net.ResolveUDPAddr("udp", strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/index.html"))
	if err != nil {
		return 0, err
	}
	// One UDP socket carries every connection: QUIC tells them apart by
	// connection ID.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	qt := &quic.Transport{Conn: pc}
	defer qt.Close()
	conns := make([]*quic.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
	}()
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := qt.Dial(ctx, ua, tlsConf, &quic.Config{MaxIdleTimeout: time.Minute, KeepAlivePeriod: 10 * time.Second})
		cancel()
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
		cc := (&http3.Transport{}).NewClientConn(c)
		req, _ := http.NewRequest("GET", url, nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	time.Sleep(time.Second) // let the server settle
	after, err := rssKiB(pid)
	if err != nil {
		return 0, err
	}
	return (after - before) / float64(n), nil
}
