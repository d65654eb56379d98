package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// The workers scenario's worker counts: Sluice single-process (0, the
// reference), then 1 and 2 workers against nginx's 1 and 2, and the 2,
// 10 and 100 workers of the master–worker paper's table.
var (
	sluiceWorkers = []int{0, 1, 2, 10, 100}
	nginxWorkers  = []int{1, 2}
)

// workerVariant is one server of the workers scenario: a peer run with a
// number of worker processes, under a name of its own.
type workerVariant struct {
	peer    peers.Peer // Name is the variant's, e.g. sluice-w2
	base    string     // the peer's own name
	workers int        // Env.Workers; 0 for a peer that manages its own (Apache)
}

// workerVariants returns the variants of the peers selected to run, in
// report order: Sluice, nginx, then Apache as Debian configures it.
func (h *harness) workerVariants() []workerVariant {
	var vs []workerVariant
	for _, p := range h.peers {
		var counts []int
		switch p.Name {
		case "sluice":
			counts = sluiceWorkers
		case "nginx":
			counts = nginxWorkers
		case "apache-default":
			vs = append(vs, workerVariant{peer: p, base: p.Name})
			continue
		default:
			continue
		}
		least, ok := p.Workers()
		for _, n := range counts {
			if !ok || n < least {
				continue
			}
			q := p
			q.Name = fmt.Sprintf("%s-w%d", p.Name, n)
			switch {
			case p.Name == "sluice" && n == 0:
				q.About = "`sluice serve --root DIR`: one process, no master (workers: 0), the reference"
			case p.Name == "sluice":
				q.About = fmt.Sprintf("`sluice serve --root DIR --workers %d`: a master and %s sharing the listening socket", n, plural(n, "worker process", "worker processes"))
			default:
				q.About = strings.Replace(p.About, "one worker", fmt.Sprintf("`worker_processes %d`", n), 1)
			}
			vs = append(vs, workerVariant{peer: q, base: p.Name, workers: n})
		}
	}
	return vs
}

// workersSteps is the number of progress steps of the workers scenario.
func (h *harness) workersSteps() int {
	if !h.has(report.Workers) {
		return 0
	}
	return 2 * len(h.workerVariants()) * h.o.rounds
}

// workers runs the workers scenario: every variant once per round,
// interleaved, on the workers scenario's CPUs.
func (h *harness) workers() error {
	vs := h.workerVariants()
	if len(vs) == 0 {
		h.note("workers scenario: none of sluice, nginx and apache-default is selected (--servers), so it did not run.")
		return nil
	}
	for _, v := range vs {
		info := report.PeerInfo{Name: v.peer.Name, About: v.peer.About, Base: v.base, Workers: v.workers}
		for _, pi := range h.rep.Peers {
			if pi.Name == v.base {
				info.Version = pi.Version
			}
		}
		if v.peer.Name != v.base { // apache-default is listed already
			h.rep.Peers = append(h.rep.Peers, info)
		}
	}
	for round := 1; round <= h.o.rounds; round++ {
		for _, v := range inTurn(vs, round) {
			if h.ctx.Err() != nil {
				return h.ctx.Err()
			}
			h.workersRound(v, round)
		}
	}
	return h.ctx.Err()
}

// workersRound measures one variant: its memory once every worker is
// up, wrk at 100 keep-alive connections, ab -n 5000 -c 500, then its
// memory again.
func (h *harness) workersRound(v workerVariant, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, v.peer.Name)
	x := float64(v.workers)
	srv, err := h.startOn(v.peer, fmt.Sprint(round), v.workers, h.o.workersCPU)
	if err != nil {
		h.note("%s: %v", tag, err)
		return
	}
	defer h.stop()
	fresh, err := h.treeMemory(srv)
	if err != nil {
		h.note("%s: memory: %v", tag, err)
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Paths: []string{pathIndex}, Conns: kaConns, Duration: warm})

	h.step(tag, "wrk c=100")
	if h.hasWrk() {
		h.wrk(srv, report.Workers, round, x)
	} else {
		h.measure(srv, report.Workers, round, x, load.Config{Paths: []string{pathIndex}, Conns: kaConns, Duration: h.o.duration})
	}
	h.step(tag, "ab -n 5000 -c 500")
	h.ab(srv, report.WorkersAB, round, x)
	if !srv.Alive() {
		h.note("%s: the server died during the run", tag)
		return
	}
	loaded, err := h.treeMemory(srv)
	if err != nil {
		h.note("%s: memory: %v", tag, err)
		return
	}
	s := report.Sample{Scenario: report.WorkersMem, Server: v.peer.Name, Round: round, X: x, Tool: "/proc/PID/smaps_rollup",
		Fresh: fresh, Loaded: loaded, RSS: loaded.Total().RSS}
	h.add(s)
}

// treeMemory reads the memory of srv's processes: the first is the one
// the harness started (the master), the others its workers.
func (h *harness) treeMemory(srv *peers.Server) (*report.TreeMemory, error) {
	procs, err := srv.Memory()
	if err != nil {
		return nil, err
	}
	var t report.TreeMemory
	for i, p := range procs {
		m := report.ProcMem{RSS: p.RSS, PSS: p.PSS}
		if i == 0 {
			t.Master = m
		} else {
			t.Workers = append(t.Workers, m)
		}
	}
	return &t, nil
}

// plural returns "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
