package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// proxyIdleConns is the idle keep-alive connections every proxy may keep
// to the upstream: above the client's kaConns, so that once warmed up no
// proxy has to dial the upstream during a run.
const proxyIdleConns = 128

// proxyRate is the fixed rate, in requests/s, the generator offers every
// proxy in the open-loop run: the same load for all, below what the
// client's core (generator and upstream) and a proxy's core sustain, so
// that CPU per request is compared at equal load rather than each at
// its own saturation.
const proxyRate = 20000

// proxyVariant is one proxy of the proxy scenario.
type proxyVariant struct {
	peer peers.Peer // Name is the variant's, e.g. sluice-proxy
	base string     // the --servers name it stands for: sluice, nginx, caddy, haproxy
}

// proxyBase returns the --servers name of the proxy peer called name:
// sluice-proxy stands for sluice, haproxy for itself.
func proxyBase(name string) string { return strings.TrimSuffix(name, "-proxy") }

// serverNames are the names --servers takes: every peer of peers.All,
// the proxies and caches that are no other scenario's peer (haproxy,
// varnish), and the PHP scenario's A/A control (sluice-again).
func serverNames() []string {
	names := peers.Names()
	for _, p := range peers.Proxies() {
		if b := proxyBase(p.Name); !slices.Contains(names, b) {
			names = append(names, b)
		}
	}
	for _, p := range peers.Caches() {
		if b := peers.CacheBase(p.Name); !slices.Contains(names, b) {
			names = append(names, b)
		}
	}
	for _, p := range peers.PHP() {
		if b := peers.PHPBase(p.Name); !slices.Contains(names, b) {
			names = append(names, b)
		}
	}
	return names
}

// againControl is the --servers name of the PHP scenario's A/A control,
// which only a --servers list that names it selects.
const againControl = "sluice-again"

// defaultServers are the servers measured when --servers is not given:
// every name but the A/A control.
func defaultServers() []string {
	return slices.DeleteFunc(serverNames(), func(s string) bool { return s == againControl })
}

// proxyVariants returns the proxies whose base server is selected, and
// the reasons, by name, of those selected that cannot run here.
func (h *harness) proxyVariants() (vs []proxyVariant, skipped map[string]string) {
	skipped = map[string]string{}
	for _, p := range peers.Proxies() {
		base := proxyBase(p.Name)
		if !slices.Contains(h.o.servers, base) {
			continue
		}
		if _, err := p.Version(h.env); err != nil {
			skipped[p.Name] = err.Error()
			continue
		}
		vs = append(vs, proxyVariant{peer: p, base: base})
	}
	return vs, skipped
}

// proxySteps is the number of progress steps of the proxy scenario.
func (h *harness) proxySteps() int {
	if !h.has(report.Proxy) {
		return 0
	}
	vs, _ := h.proxyVariants()
	return 3 * len(vs) * h.o.rounds
}

// proxyScenario runs the proxy scenario: the upstream started once on
// the client's CPU, then every proxy once per round, interleaved.
func (h *harness) proxyScenario() error {
	vs, skipped := h.proxyVariants()
	h.listProxyPeers(vs, skipped)
	for _, p := range peers.Proxies() {
		if why, ok := skipped[p.Name]; ok {
			h.note("proxy scenario: %s skipped: %s.", p.Name, why)
		}
	}
	if len(vs) == 0 {
		h.note("proxy scenario: none of sluice, nginx, caddy and haproxy is selected (--servers) and installed, so it did not run.")
		return nil
	}
	h.rep.ProxyIdleConns = proxyIdleConns
	up, err := h.startUpstream()
	if err != nil {
		h.note("proxy scenario: the upstream: %v; it did not run.", err)
		return nil
	}
	defer up.Stop()
	for round := 1; round <= h.o.rounds; round++ {
		for _, v := range inTurn(vs, round) {
			if h.ctx.Err() != nil {
				return h.ctx.Err()
			}
			if !up.Alive() {
				h.note("proxy scenario: the upstream exited during the run, which stopped there.")
				return nil
			}
			h.proxyRound(v, up, round)
		}
	}
	return h.ctx.Err()
}

// listProxyPeers adds the proxies, those skipped included, and the
// upstream to the report's peers.
func (h *harness) listProxyPeers(vs []proxyVariant, skipped map[string]string) {
	for _, p := range peers.Proxies() {
		info := report.PeerInfo{Name: p.Name, About: p.About, Base: proxyBase(p.Name)}
		if why, ok := skipped[p.Name]; ok {
			info.Skipped = why
		} else if !slices.ContainsFunc(vs, func(v proxyVariant) bool { return v.peer.Name == p.Name }) {
			continue // not selected
		} else if v, err := p.Version(h.env); err == nil {
			info.Version = v
		}
		h.rep.Peers = append(h.rep.Peers, info)
	}
	up := peers.Upstream()
	info := report.PeerInfo{Name: up.Name, About: up.About}
	if v, err := up.Version(h.env); err == nil {
		info.Version = v
	} else {
		info.Skipped = err.Error()
	}
	h.rep.Peers = append(h.rep.Peers, info)
}

// startUpstream starts the upstream on the client's CPU (as the load
// generator's partner: the server CPU is the proxies' alone), answering
// the docroot's 151-byte index.html.
func (h *harness) startUpstream() (*peers.Server, error) {
	body, err := os.ReadFile(filepath.Join(h.env.Root, "index.html"))
	if err != nil {
		return nil, err
	}
	port, err := machine.FreePort()
	if err != nil {
		return nil, err
	}
	env := h.env
	env.Port, env.Body = port, string(body)
	env.Dir = filepath.Join(h.tmp, "run", "upstream")
	srv, err := peers.Start(peers.Upstream(), env, h.o.clientCPU)
	if err != nil {
		return nil, err
	}
	h.recordConfig(srv)
	h.rep.Machine = append(h.rep.Machine, fmt.Sprintf("upstream of the proxy scenario: %s on CPU %s (taskset)", peers.Upstream().Name, h.o.clientCPU))
	return srv, nil
}

// proxyRound starts one proxy in front of up, checks that it answers the
// upstream's page, warms it up (filling its pool), and measures it at
// 100 keep-alive connections: sluicebench's generator, wrk, then the
// generator again at the fixed rate proxyRate.
func (h *harness) proxyRound(v proxyVariant, up *peers.Server, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, v.peer.Name)
	saved := h.env
	h.env.Upstream, h.env.IdleConns = up.Env.Addr(), proxyIdleConns
	srv, err := h.start(v.peer, "proxy-"+fmt.Sprint(round))
	h.env = saved
	if err != nil {
		h.note("%s: %v", tag, err)
		return
	}
	defer h.stop()
	if err := checkProxied(srv.Env.Addr(), up.Env.Body); err != nil {
		h.note("%s: %v; not measured", tag, err)
		return
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Paths: []string{pathIndex}, Conns: kaConns, Duration: warm})

	h.step(tag, "proxy c=100")
	h.proxyMeasure(srv, up, round, func() (report.Sample, clientRun, bool) {
		return h.generatorSample(srv, report.Proxy, round, kaConns, load.Config{Paths: []string{pathIndex}, Conns: kaConns, Duration: h.o.duration})
	})
	if h.hasWrk() && srv.Alive() {
		h.step(tag, "proxy wrk c=100")
		h.proxyMeasure(srv, up, round, func() (report.Sample, clientRun, bool) {
			return h.wrkSample(srv, report.ProxyWrk, round, kaConns)
		})
	}
	if srv.Alive() {
		h.step(tag, fmt.Sprintf("proxy %d req/s", proxyRate))
		h.proxyMeasure(srv, up, round, func() (report.Sample, clientRun, bool) {
			return h.generatorSample(srv, report.ProxyRate, round, proxyRate, load.Config{Paths: []string{pathIndex}, Conns: kaConns,
				Rate: proxyRate, Duration: h.o.duration, Timeout: 2 * time.Second})
		})
	}
}

// generatorSample is measureSample, with the CPU and wall-clock time the
// harness (the generator) spent.
func (h *harness) generatorSample(srv *peers.Server, sc string, round int, x float64, cfg load.Config) (report.Sample, clientRun, bool) {
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	s, ok := h.measureSample(srv, sc, round, x, cfg)
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	return s, clientRun{cpu: cpu, wall: wall}, ok
}

// proxyMeasure runs one measurement of srv with run, reading the
// upstream's accepted connections and CPU time before and after, and
// records the sample with them.
func (h *harness) proxyMeasure(srv, up *peers.Server, round int, run func() (report.Sample, clientRun, bool)) {
	a0, err0 := upstreamAccepts(up.Env.Addr())
	u0, _ := up.Usage()
	s, client, ok := run()
	u1, _ := up.Usage()
	a1, err1 := upstreamAccepts(up.Env.Addr())
	if !ok {
		return
	}
	// The second reading's own connection is counted in a1.
	s.UpstreamConns = a1 - a0 - 1
	if err := errors.Join(err0, err1); err != nil {
		s.UpstreamConns = -1
		h.note("%s %s: the upstream's stub_status: %v", srv.Peer.Name, s.Scenario, err)
	}
	upCPU := u1.CPU - u0.CPU
	if s.OK > 0 {
		s.UpstreamCPUus = float64(upCPU.Microseconds()) / float64(s.OK)
	}
	if client.wall > 0 {
		s.ClientBusy = 100 * float64(client.cpu+upCPU) / float64(client.wall)
	}
	h.add(s)
	h.prog.logf("    upstream: %d connection(s) opened, %.1f CPU-µs/req; client core %.0f %% busy", s.UpstreamConns, s.UpstreamCPUus, s.ClientBusy)
}

// checkProxied makes one GET / through the proxy at addr and wants 200
// and body, the upstream's page: a proxy that answers anything else (its
// own page, an error) is misconfigured and not worth measuring.
func checkProxied(addr, body string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + pathIndex)
	if err != nil {
		return fmt.Errorf("GET / through the proxy: %w", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET / through the proxy: %w", err)
	}
	if resp.StatusCode != http.StatusOK || string(got) != body {
		return fmt.Errorf("GET / through the proxy answered %s with %d bytes, not 200 with the upstream's %d-byte page", resp.Status, len(got), len(body))
	}
	return nil
}

// upstreamAccepts reads the count of connections the upstream (nginx)
// has accepted from its stub_status, over a connection of its own, which
// the count includes.
func upstreamAccepts(addr string) (int64, error) {
	text, err := stubStatus(addr)
	if err != nil {
		return 0, err
	}
	return parseStubStatus(text)
}

// originRequests reads the count of requests the nginx at addr (the
// cache scenario's origin) has answered from its stub_status, over a
// connection of its own, whose request the count includes.
func originRequests(addr string) (int64, error) {
	text, err := stubStatus(addr)
	if err != nil {
		return 0, err
	}
	return parseStubRequests(text)
}

// stubStatus returns the stub_status page of the nginx at addr.
func stubStatus(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", peers.UpstreamStatusPath, addr); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", peers.UpstreamStatusPath, resp.Status)
	}
	return string(text), nil
}

// stubStatusCounts matches the counts line of nginx's stub_status, after
// "server accepts handled requests".
var stubStatusCounts = regexp.MustCompile(`server accepts handled requests\s*\n\s*(\d+)\s+(\d+)\s+(\d+)`)

// parseStubStatus returns the accepted connections of an nginx
// stub_status page.
func parseStubStatus(text string) (int64, error) {
	m := stubStatusCounts.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("not an nginx stub_status page: %q", text)
	}
	return strconv.ParseInt(m[1], 10, 64)
}

// parseStubRequests returns the requests an nginx stub_status page
// counts.
func parseStubRequests(text string) (int64, error) {
	m := stubStatusCounts.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("not an nginx stub_status page: %q", text)
	}
	return strconv.ParseInt(m[3], 10, 64)
}
