// Command tlsidle measures what idle TLS keep-alive connections cost a
// server in resident memory: Sluice (`sluice serve -c` with one TLS
// listener), nginx and h2o (the Debian packages, one worker or thread
// each), one ECDSA P-256 certificate, in the same run. For each server
// and protocol (HTTP/1.1 and HTTP/2, chosen by ALPN) it starts the server
// afresh, opens N connections that each complete the handshake, make one
// GET of a 151-byte page, read the response and stay open and idle, and
// reports the growth of the server's resident set (VmRSS, summed over its
// process tree) divided by N. Then every connection makes its request
// again (on HTTP/2, a new stream) and must be answered, which shows that
// none was dropped while idle. The client offers the X25519 key share
// alone, which every server here supports; --mlkem offers
// X25519MLKEM768 first, as browsers and Go's client do, which makes the
// ClientHello larger (and Sluice answers with it).
//
// The server runs on core 1 (taskset) and this client on core 0. The
// descriptor limit is raised to the hard one (servers inherit it), and the
// clients bind to source addresses spread over 127.0.0.0/8, so that the
// ephemeral ports do not run out across runs. From the repository root:
//
//	go build -o /tmp/sluice ./cmd/sluice
//	go -C bench run ./cmd/tlsidle --sluice /tmp/sluice --conns 10000
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/template"
	"time"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/tlscert"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// page is the document every server serves: 151 bytes, as in the engine
// benchmark.
var page = bytes.Repeat([]byte("x"), 150)

func main() {
	var o options
	flag.StringVar(&o.sluice, "sluice", "", "the sluice `BINARY` (required for the sluice server)")
	flag.StringVar(&o.servers, "servers", "sluice,nginx,h2o", "servers to measure, in order")
	flag.StringVar(&o.protos, "protos", "h1,h2", "protocols: h1 (ALPN http/1.1), h2")
	flag.IntVar(&o.conns, "conns", 10000, "idle connections per run")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds (every server and protocol in each)")
	flag.DurationVar(&o.settle, "settle", time.Second, "wait after the last connection before reading the RSS")
	flag.IntVar(&o.par, "par", 64, "connections set up at a time")
	flag.BoolVar(&o.mlkem, "mlkem", false, "offer X25519MLKEM768 as well as X25519, as browsers do (Go's default; "+
		"a larger ClientHello, and a server that supports it answers with it)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "tlsidle:", err)
		os.Exit(1)
	}
}

type options struct {
	sluice, servers, protos string
	conns, rounds, par      int
	settle                  time.Duration
	mlkem                   bool
}

func run(o options) error {
	nofile := machine.RaiseNofile()
	if nofile < o.conns+100 {
		return fmt.Errorf("%d connections need %d descriptors; the limit is %d", o.conns, o.conns+100, nofile)
	}
	if runtime.NumCPU() >= 2 {
		machine.Pin(0) // the client on core 0, the servers having core 1
	}
	dir, err := os.MkdirTemp("", "tlsidle")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := setup(dir); err != nil {
		return err
	}
	pool, err := tlscert.Pool(filepath.Join(dir, "cert.pem"))
	if err != nil {
		return err
	}

	groups := "X25519"
	if o.mlkem {
		groups = "X25519MLKEM768, X25519"
	}
	fmt.Printf("# %d idle TLS connections per run, ECDSA P-256, client key shares %s, %s\n", o.conns, groups, time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-6s %-6s %-5s %-8s %12s %12s %10s %10s\n", "round", "server", "proto", "version", "RSS before", "RSS idle", "B/conn", "answered")
	for round := 1; round <= o.rounds; round++ {
		for _, name := range strings.Split(o.servers, ",") {
			for _, proto := range strings.Split(o.protos, ",") {
				r, err := measure(o, dir, name, proto, pool, nofile)
				if err != nil {
					fmt.Printf("%-6d %-6s %-5s error: %v\n", round, name, proto, err)
					continue
				}
				fmt.Printf("%-6d %-6s %-5s %-8s %12d %12d %10.0f %10d\n", round, name, proto, tls.VersionName(r.version), r.before, r.idle,
					float64(r.idle-r.before)/float64(r.held), r.answered)
			}
		}
	}
	return nil
}

// result is one run's figures.
type result struct {
	before, idle int64  // the server's RSS before the connections and with them idle
	held         int    // connections held idle
	answered     int    // connections answered again
	version      uint16 // the TLS version negotiated
}

// source numbers client connections across runs, so that each run binds
// to fresh source addresses (those of the last run's connections are in
// TIME_WAIT).
var source atomic.Int64

// sourceAddr returns the next source address: 200 connections share each
// of 127.1.0.1, 127.1.0.2, ….
func sourceAddr() *net.TCPAddr {
	k := int(source.Add(1)-1) / 200
	return &net.TCPAddr{IP: net.IPv4(127, byte(1+k/(250*256)), byte(k/250%256), byte(k%250+1))}
}

func measure(o options, dir, name, proto string, pool *x509.CertPool, nofile int) (result, error) {
	port, err := machine.FreePort()
	if err != nil {
		return result{}, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	sdir, err := os.MkdirTemp(dir, name)
	if err != nil {
		return result{}, err
	}
	os.Chmod(sdir, 0o777)
	cmd, err := start(o, dir, sdir, name, port, nofile)
	if err != nil {
		return result{}, err
	}
	defer stop(cmd)
	alpn := map[string]string{"h1": "http/1.1", "h2": "h2"}[proto]
	if alpn == "" {
		return result{}, fmt.Errorf("unknown protocol %q", proto)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{alpn},
		CurvePreferences: []tls.CurveID{tls.X25519}}
	if o.mlkem {
		cfg.CurvePreferences = []tls.CurveID{tls.X25519MLKEM768, tls.X25519}
	}
	if err := waitReady(addr, cfg); err != nil {
		return result{}, fmt.Errorf("%s did not start: %v; log: %s", name, err, readLogs(sdir))
	}
	// A few connections first, so that lazily made state exists.
	for range 20 {
		c, err := dial(addr, cfg, alpn)
		if err != nil {
			return result{}, err
		}
		c.Close()
	}
	time.Sleep(time.Second)
	var r result
	r.before = treeRSS(cmd.Process.Pid)
	conns := make([]*client, o.conns)
	err = each(o.par, len(conns), func(i int) error {
		c, err := dial(addr, cfg, alpn)
		conns[i] = c
		return err
	})
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if err != nil {
		return result{}, fmt.Errorf("opening the connections: %v; log: %s", err, readLogs(sdir))
	}
	r.held = len(conns)
	r.version = conns[0].tc.ConnectionState().Version
	time.Sleep(o.settle)
	r.idle = treeRSS(cmd.Process.Pid)
	var answered atomic.Int64
	each(o.par, len(conns), func(i int) error {
		if conns[i].get() == nil {
			answered.Add(1)
		}
		return nil
	})
	r.answered = int(answered.Load())
	return r, nil
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

// client is one client connection: over HTTP/2, with its framer and
// HPACK state and its next stream.
type client struct {
	tc     *tls.Conn
	br     *bufio.Reader // HTTP/1.1
	fr     *http2.Framer // HTTP/2
	hbuf   bytes.Buffer
	enc    *hpack.Encoder
	dec    *hpack.Decoder
	stream uint32
}

// dial connects to addr, completes the handshake (the protocol must be
// alpn) and makes one request.
func dial(addr string, cfg *tls.Config, alpn string) (*client, error) {
	d := net.Dialer{LocalAddr: sourceAddr(), Timeout: time.Minute}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, cfg)
	tc.SetDeadline(time.Now().Add(time.Minute))
	if err := tc.Handshake(); err != nil {
		nc.Close()
		return nil, err
	}
	if got := tc.ConnectionState().NegotiatedProtocol; got != alpn {
		tc.Close()
		return nil, fmt.Errorf("ALPN chose %q, not %q", got, alpn)
	}
	c := &client{tc: tc}
	if alpn == "h2" {
		c.fr = http2.NewFramer(tc, tc)
		c.enc = hpack.NewEncoder(&c.hbuf)
		c.dec = hpack.NewDecoder(4096, nil)
		c.stream = 1
		if _, err := io.WriteString(tc, http2.ClientPreface); err != nil {
			tc.Close()
			return nil, err
		}
		if err := c.fr.WriteSettings(); err != nil {
			tc.Close()
			return nil, err
		}
	} else {
		c.br = bufio.NewReaderSize(tc, 1024)
	}
	if err := c.get(); err != nil {
		tc.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection.
func (c *client) Close() { c.tc.Close() }

// get makes a GET of the page and checks the answer.
func (c *client) get() error {
	c.tc.SetDeadline(time.Now().Add(time.Minute))
	defer c.tc.SetDeadline(time.Time{})
	if c.fr == nil {
		if _, err := io.WriteString(c.tc, "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
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
	c.hbuf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/index.html"}} {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	id := c.stream
	c.stream += 2
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(),
		EndStream: true, EndHeaders: true}); err != nil {
		return err
	}
	status, n := "", 0
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.fr.WriteSettingsAck(); err != nil {
					return err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		case *http2.RSTStreamFrame:
			return fmt.Errorf("RST_STREAM %v", f.ErrCode)
		case *http2.HeadersFrame:
			if f.StreamID != id {
				break
			}
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return err
			}
			for _, hf := range fields {
				if hf.Name == ":status" {
					status = hf.Value
				}
			}
			if f.StreamEnded() {
				return fmt.Errorf("status %s and no body", status)
			}
		case *http2.DataFrame:
			if f.StreamID != id {
				break
			}
			n += len(f.Data())
			if f.StreamEnded() {
				if status != "200" || n != len(page) {
					return fmt.Errorf("status %s, %d bytes", status, n)
				}
				return nil
			}
		}
	}
}

// waitReady waits until the server completes a handshake.
func waitReady(addr string, cfg *tls.Config) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, cfg)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setup writes the certificate, its key, the document root and the
// servers' configuration templates' shared files into dir.
func setup(dir string) error {
	if err := tlscert.Write(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")); err != nil {
		return err
	}
	root := filepath.Join(dir, "root")
	os.Chmod(dir, 0o755)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "index.html"), page, 0o644)
}

// Configurations: one worker or thread, the keep-alive timeouts longer
// than the run, no access log.
var confs = map[string]string{
	"sluice": `listen:
  address: {{.Addr}}
  tls:
    cert: {{.Dir}}/cert.pem
    key: {{.Dir}}/key.pem
limits:
  idle_timeout: 300s
  busy_idle_timeout: 300s
routes:
  - match: /
    pipeline:
      - files: {{.Dir}}/root
`,
	"nginx": `daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile {{.NoFile}};
pid {{.SDir}}/nginx.pid;
error_log {{.SDir}}/error.log warn;
events {
    worker_connections {{.NoFile}};
    use epoll;
    multi_accept on;
}
http {
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    client_body_temp_path {{.SDir}}/client_body;
    proxy_temp_path {{.SDir}}/proxy;
    fastcgi_temp_path {{.SDir}}/fastcgi;
    uwsgi_temp_path {{.SDir}}/uwsgi;
    scgi_temp_path {{.SDir}}/scgi;
    server {
        listen {{.Addr}} ssl http2 backlog=4096;
        ssl_certificate {{.Dir}}/cert.pem;
        ssl_certificate_key {{.Dir}}/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        root {{.Dir}}/root;
    }
}
`,
	"h2o": `user: nobody
num-threads: 1
max-connections: {{.NoFile}}
pid-file: {{.SDir}}/h2o.pid
error-log: {{.SDir}}/error.log
http1-request-timeout: 300
http2-idle-timeout: 300
listen:
  host: 127.0.0.1
  port: {{.Port}}
  ssl:
    certificate-file: {{.Dir}}/cert.pem
    key-file: {{.Dir}}/key.pem
hosts:
  default:
    paths:
      /:
        file.dir: {{.Dir}}/root
`,
}

// start starts server name on port with its configuration in sdir.
func start(o options, dir, sdir, name string, port, nofile int) (*exec.Cmd, error) {
	text, ok := confs[name]
	if !ok {
		return nil, fmt.Errorf("unknown server %q", name)
	}
	conf := filepath.Join(sdir, name+".conf")
	f, err := os.Create(conf)
	if err != nil {
		return nil, err
	}
	err = template.Must(template.New(name).Parse(text)).Execute(f, map[string]any{
		"Addr": net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "Port": port, "Dir": dir, "SDir": sdir, "NoFile": nofile,
	})
	f.Close()
	if err != nil {
		return nil, err
	}
	var argv []string
	switch name {
	case "sluice":
		if o.sluice == "" {
			return nil, errors.New("--sluice is not set")
		}
		argv = []string{o.sluice, "serve", "-c", conf}
	case "nginx":
		argv = []string{"nginx", "-p", sdir, "-c", conf, "-e", filepath.Join(sdir, "error.log")}
	case "h2o":
		argv = []string{"h2o", "-c", conf}
	}
	if runtime.NumCPU() > 1 {
		argv = append([]string{"taskset", "-c", "1"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := os.Create(filepath.Join(sdir, "output.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1") // run as root, sluice's config names no user
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// stop ends the server's process group and waits for it.
func stop(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func readLogs(sdir string) string {
	var b strings.Builder
	for _, n := range []string{"output.log", "error.log"} {
		if data, err := os.ReadFile(filepath.Join(sdir, n)); err == nil {
			fmt.Fprintf(&b, "%s: %.1000s\n", n, data)
		}
	}
	return b.String()
}

// treeRSS sums VmRSS over pid and its descendants.
func treeRSS(pid int) int64 {
	var sum int64
	for _, p := range tree(pid) {
		sum += procRSS(p)
	}
	return sum
}

func procRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// tree returns pid and its descendants.
func tree(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		for _, t := range tasks {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], t.Name()))
			for _, f := range strings.Fields(string(data)) {
				if p, err := strconv.Atoi(f); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}
