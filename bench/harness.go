package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// harness is the state of one benchmark run.
type harness struct {
	ctx    context.Context
	o      options
	prog   *progress
	repo   string // repository root, "" if not in one
	tmp    string // scratch directory
	env    peers.Env
	peers  []peers.Peer // those that can run
	rep    report.Report
	nofile int
	pinned bool
	server *peers.Server // the running server, stopped by cleanup

	loadMin, loadMax float64 // 1-minute load average seen during the run
	others           float64 // CPU of processes outside this run, in cores on average (-1: unknown)
}

// cpuTicks are CPU times in clock ticks (USER_HZ) as /proc reports them.
type cpuTicks struct {
	busy uint64 // the machine's user, nice and system time (/proc/stat)
	tree uint64 // this process's and its reaped descendants' (/proc/self/stat)
}

// readCPUTicks reads the machine's and this process tree's CPU time. The
// tree's includes a child only once it has exited and been waited for,
// as every server, wrk and ab of a run is by its end.
func readCPUTicks() (cpuTicks, bool) {
	var t cpuTicks
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t, false
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "cpu" {
		return t, false
	}
	for _, v := range f[1:4] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return t, false
		}
		t.busy += n
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return t, false
	}
	// The fields after the command, which is in parentheses and may
	// hold spaces: utime, stime, cutime and cstime are the 14th to 17th
	// of the line, the 12th to 15th after the command.
	_, rest, ok := strings.Cut(string(self), ") ")
	g := strings.Fields(rest)
	if !ok || len(g) < 15 {
		return t, false
	}
	for _, v := range g[11:15] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return t, false
		}
		t.tree += n
	}
	return t, true
}

// othersCPU is the CPU, in cores on average over wall, that processes
// outside this run used between a and b, clock ticks at hz per second.
func othersCPU(a, b cpuTicks, wall time.Duration, hz float64) float64 {
	if wall <= 0 || b.busy < a.busy {
		return -1
	}
	others := float64(b.busy-a.busy) - float64(b.tree-a.tree)
	return max(others, 0) / hz / wall.Seconds()
}

// watchLoad samples the 1-minute load average every 5 s until ctx ends,
// and then sets h.others, the CPU that processes outside this run used
// meanwhile, so the report can say whether other work shared the
// machine. The load average alone cannot: it counts the runnable threads
// of the servers measured too (many, for a server with a thread per
// connection at 10,000 of them).
func (h *harness) watchLoad(ctx context.Context) {
	sample := func() {
		data, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return
		}
		if h.loadMax == 0 || v < h.loadMin {
			h.loadMin = v
		}
		h.loadMax = max(h.loadMax, v)
	}
	sample()
	h.others = -1
	start, ok := readCPUTicks()
	began := time.Now()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if end, ok2 := readCPUTicks(); ok && ok2 {
				h.others = othersCPU(start, end, time.Since(began), userHZ)
			}
			return
		case <-t.C:
			sample()
		}
	}
}

// userHZ is the clock tick of /proc's CPU times (USER_HZ), 100 on Linux.
const userHZ = 100

// quietOthers is the most CPU, in cores on average, that processes
// outside a run may use for the run to count as quiet: the machine's own
// daemons use a few percent of one.
const quietOthers = 0.15

func newHarness(ctx context.Context, o options, stderr io.Writer) (*harness, error) {
	h := &harness{ctx: ctx, o: o, repo: repoRoot()}
	h.prog = newProgress(stderr, 0)
	h.rep = report.Report{
		Command: o.commandStr, Reproduce: o.reproduce, Started: time.Now(), Rounds: o.rounds,
		Duration: o.duration, Sweep: o.sweep, Quick: o.quick, Scenarios: o.scenarios,
		ClientCPU: o.clientCPU,
	}
	if slices.Contains(o.scenarios, report.Workers) {
		h.rep.WorkersCPU = o.workersCPU
	}
	h.pin()
	h.nofile = machine.RaiseNofile()
	if h.o.maxConns+200 > h.nofile {
		n := max(h.nofile-200, 1)
		h.note("RLIMIT_NOFILE is %d here (hard limit), so the %d-connection points use %d connections.", h.nofile, h.o.maxConns, n)
		h.o.maxConns = n
	}
	var err error
	if h.tmp, err = os.MkdirTemp("", "sluicebench-"); err != nil {
		return nil, err
	}
	os.Chmod(h.tmp, 0o755) // servers that drop privileges read the docroot
	h.env = peers.Env{Root: filepath.Join(h.tmp, "root"), Host: "127.0.0.1", NoFile: h.nofile, Bin: filepath.Join(h.tmp, "bin")}
	if err := makeDocroot(h.env.Root); err != nil {
		return nil, err
	}
	if err := h.build(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *harness) note(format string, args ...any) {
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	h.rep.Notes = append(h.rep.Notes, msg)
	h.prog.logf("%s", msg)
}

func (h *harness) cleanup() {
	h.server.Stop()
	h.server = nil
	h.prog.close()
	if h.tmp != "" {
		if h.o.keep {
			h.prog.logf("scratch directory kept: %s", h.tmp)
		} else {
			os.RemoveAll(h.tmp)
		}
	}
}

// pin binds every thread of this process to the client CPUs (threads
// created later inherit the mask) and sets GOMAXPROCS to match.
func (h *harness) pin() {
	if runtime.NumCPU() < 2 {
		h.note("Only one CPU: client and servers share it; the figures are not comparable to a two-core run.")
		return
	}
	cpus := cpuList(h.o.clientCPU)
	machine.Pin(cpus...)
	runtime.GOMAXPROCS(max(len(cpus), 1))
	h.pinned = true
}

// Documents served by every peer.
const (
	pathIndex    = "/"              // index.html, Warp's 151-byte page
	pathWebpipes = "/4k.html"       // webpipes' 4 KB file
	pathTemplate = "/template.html" // c10k scenario: stand-in for a template page (the mix scenario has real ones)
	pathDynamic  = "/dynamic.html"  // c10k scenario: stand-in for a database page
)

// sizes are the file sizes of the C++ paper's sweep (1 KB–300 KB), up to 1 MB.
var sizes = []int{1 << 10, 5 << 10, 10 << 10, 50 << 10, 100 << 10, 300 << 10, 1 << 20}

func sizePath(n int) string { return fmt.Sprintf("/size-%d.bin", n) }

// c10kFile is the c10k-wrk scenario's large page: 80 KB, the size of the
// C10K seed's static pages (issue 18's measurement).
const c10kFile = 80 << 10

// makeDocroot writes the documents: index.html of exactly 151 bytes (as in
// Warp's paper), a 4 KB page, the C10K stand-ins, the size files and the
// c10k-wrk scenario's 80 KB file.
func makeDocroot(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	page := func(n int, title string) []byte {
		head := "<!DOCTYPE html>\n<html><head><title>" + title + "</title></head>\n<body><p>Hello from the Sluice benchmark.</p></body>\n</html>\n"
		if n < len(head)+8 {
			panic("page too small")
		}
		return []byte(head + "<!--" + strings.Repeat("x", n-len(head)-8) + "-->\n")
	}
	files := map[string][]byte{
		"index.html":    page(151, "Sluice"),
		"4k.html":       page(4096, "Sluice 4 KB"),
		"template.html": page(2048, "Sluice template"),
		"dynamic.html":  page(1024, "Sluice dynamic"),
	}
	if len(files["index.html"]) != 151 {
		return fmt.Errorf("index.html is %d bytes, not 151", len(files["index.html"]))
	}
	for _, n := range append(slices.Clone(sizes), c10kFile) {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		files[strings.TrimPrefix(sizePath(n), "/")] = b
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// build builds the Go peers and, unless given, sluice; and picks the
// peers that can run.
func (h *harness) build() error {
	if err := os.MkdirAll(h.env.Bin, 0o755); err != nil {
		return err
	}
	goBuild := func(dir, out, pkg string) error {
		cmd := exec.CommandContext(h.ctx, "go", "build", "-o", filepath.Join(h.env.Bin, out), pkg)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	want := func(name string) bool { return slices.Contains(h.o.servers, name) }
	h.env.Sluice = h.o.sluice
	if h.repo != "" {
		h.prog.logf("building the Go peers in %s", h.env.Bin)
		if want("nethttp") {
			if err := goBuild(filepath.Join(h.repo, "bench"), "nethttp-peer", "./peers/nethttp"); err != nil {
				h.note("nethttp peer: %v", err)
			}
			if slices.Contains(h.o.scenarios, report.Mix) || slices.Contains(h.o.scenarios, report.MixSlowDB) {
				if err := goBuild(filepath.Join(h.repo, "bench"), "gomix-peer", "./peers/gomix"); err != nil {
					h.note("nethttp-mix peer: %v", err)
				}
			}
		}
		if want("fasthttp") {
			if err := goBuild(filepath.Join(h.repo, "bench", "peers", "fasthttp"), "fasthttp-peer", "."); err != nil {
				h.note("fasthttp peer: %v", err)
			}
		}
		if h.env.Sluice == "" && want("sluice") {
			if err := goBuild(h.repo, "sluice", "./cmd/sluice"); err != nil {
				h.note("sluice: %v", err)
			} else {
				h.env.Sluice = filepath.Join(h.env.Bin, "sluice")
			}
		}
	}
	for _, p := range peers.All() {
		if !want(p.Name) {
			continue
		}
		info := report.PeerInfo{Name: p.Name, About: p.About}
		if v, err := p.Version(h.env); err != nil {
			info.Skipped = err.Error()
			h.prog.logf("skipping %s: %v", p.Name, err)
		} else {
			info.Version = v
			h.peers = append(h.peers, p)
		}
		h.rep.Peers = append(h.rep.Peers, info)
	}
	if len(h.peers) == 0 {
		// haproxy, in the proxy scenario, and varnish, in the cache
		// scenario, are no peers of All.
		vs, _ := h.proxyVariants()
		ts, _ := h.tlsPeers()
		ps, _ := h.phpPeers()
		cs, _ := h.cacheVariants()
		if (!h.has(report.Proxy) || len(vs) == 0) && (!h.has(report.TLS) || len(ts) == 0) && (!h.has(report.PHP) || len(ps) == 0) &&
			(!h.has(report.Cache) || len(cs) == 0) {
			return fmt.Errorf("no server to measure")
		}
	}
	return nil
}

// start starts peer p on the server CPU in a fresh scratch directory.
func (h *harness) start(p peers.Peer, label string) (*peers.Server, error) {
	return h.startOn(p, label, 0, h.o.serverCPU)
}

// startOn starts peer p with workers worker processes (Env.Workers) on
// the CPUs cpus, in a fresh scratch directory.
func (h *harness) startOn(p peers.Peer, label string, workers int, cpus string) (*peers.Server, error) {
	port, err := machine.FreePort()
	if err != nil {
		return nil, err
	}
	env := h.env
	env.Port = port
	env.Workers = workers
	env.Dir = filepath.Join(h.tmp, "run", p.Name+"-"+label)
	os.RemoveAll(env.Dir)
	srv, err := peers.Start(p, env, cpus)
	if err != nil {
		return nil, err
	}
	h.server = srv
	h.recordConfig(srv)
	return srv, nil
}

// recordConfig keeps the first configuration each peer ran with, with
// the scratch paths replaced by placeholders, for the report.
func (h *harness) recordConfig(srv *peers.Server) {
	for i := range h.rep.Peers {
		pi := &h.rep.Peers[i]
		if pi.Name != srv.Peer.Name || pi.Command != "" {
			continue
		}
		clean := func(s string) string {
			s = strings.ReplaceAll(s, srv.Env.Dir, "$RUN")
			s = strings.ReplaceAll(s, filepath.Join(h.tmp, "php"), "$PHP") // the php scenario's site and pool
			s = strings.ReplaceAll(s, h.env.Root, "$ROOT")
			s = strings.ReplaceAll(s, h.env.Bin, "$BIN")
			if rel, ok := inRepo(h.repo, h.env.Sluice); ok {
				s = strings.ReplaceAll(s, h.env.Sluice, rel)
			}
			if srv.Env.Upstream != "" {
				s = strings.ReplaceAll(s, srv.Env.Upstream, "127.0.0.1:$UPSTREAM_PORT")
			}
			return strings.ReplaceAll(s, srv.Env.Addr(), "127.0.0.1:$PORT")
		}
		pi.Command = clean("taskset -c " + srv.CPUs + " " + strings.Join(srv.Argv, " "))
		pi.Config = clean(srv.Config)
	}
}

func (h *harness) stop() {
	h.server.Stop()
	h.server = nil
}

func runtimeNumCPU() int { return runtime.NumCPU() }
