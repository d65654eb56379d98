//go:build linux

package supervisor

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// setsEnvVar gives the worker of TestMasterWorkerHelper an upstream set
// "app" in memory (memSets).
const setsEnvVar = "SUPERVISOR_TEST_SETS"

// memSets is admin.Sets with one set, "app", of hosts in memory.
type memSets struct {
	mu    sync.Mutex
	hosts []admin.HostSpec
}

func newMemSets() *memSets {
	return &memSets{hosts: []admin.HostSpec{{Name: "http://127.0.0.1:9001"}}}
}

func (s *memSets) state() admin.SetState {
	st := admin.SetState{SetState: upstream.SetState{Name: "app", Policy: "round_robin"}}
	for _, h := range s.hosts {
		st.Hosts = append(st.Hosts, admin.HostState{Name: h.Name, Weight: h.Weight, Draining: h.Drain, Up: true})
	}
	return st
}

func (s *memSets) List() []admin.SetState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []admin.SetState{s.state()}
}

func (s *memSets) Apply(name string, c admin.Change) (admin.SetState, error) {
	if name != "app" {
		return admin.SetState{}, admin.ErrNoSet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Replace {
		s.hosts = slices.Clone(c.Hosts)
		return s.state(), nil
	}
	for _, r := range c.Remove {
		i := slices.IndexFunc(s.hosts, func(h admin.HostSpec) bool { return h.Name == r })
		if i < 0 {
			return admin.SetState{}, &admin.ChangeError{Msg: "no host " + r}
		}
		s.hosts = slices.Delete(s.hosts, i, i+1)
	}
	s.hosts = append(s.hosts, c.Add...)
	return s.state(), nil
}

// everyWorkersHosts asks every serving worker for its set "app" and
// returns each one's host names, joined by spaces.
func everyWorkersHosts(t *testing.T, tm *testMaster) []string {
	t.Helper()
	var targets []*worker
	if err := tm.do(func() { targets = tm.serving(false) }); err != nil {
		t.Fatal(err)
	}
	replies, missing := tm.fanOut(&tm.upstreams, targets, message{Type: msgUpstreams})
	if missing > 0 {
		t.Fatalf("%d of %d workers did not list their sets", missing, len(targets))
	}
	var out []string
	for _, r := range replies {
		var names []string
		for _, s := range r.m.Sets {
			for _, h := range s.Hosts {
				names = append(names, h.Name)
			}
		}
		out = append(out, strings.Join(names, " "))
	}
	return out
}

// An upstream change reaches every serving worker before it is
// answered, and a worker that replaces one that died starts with it.
func TestUpstreamChangeReachesEveryWorker(t *testing.T) {
	t.Setenv(setsEnvVar, "1")
	tm, _ := startMaster(t, "listen: 127.0.0.1:0\nworkers: 3\nhealth: {interval: 50ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")

	if _, err := tm.ChangeUpstream("nope", admin.Change{Remove: []string{"x"}}); !errors.Is(err, admin.ErrNoSet) {
		t.Errorf("a change to no set: %v, want ErrNoSet", err)
	}
	var ce *admin.ChangeError
	if _, err := tm.ChangeUpstream("app", admin.Change{Remove: []string{"http://127.0.0.1:1"}}); !errors.As(err, &ce) {
		t.Errorf("removing a host the set lacks: %v, want a ChangeError", err)
	}
	state, err := tm.ChangeUpstream("app", admin.Change{Add: []admin.HostSpec{{Name: "http://127.0.0.1:9002", Weight: 2}}})
	if err != nil || len(state.Hosts) != 2 || state.Worker == 0 {
		t.Fatalf("PATCH: %+v, %v", state, err)
	}
	want := "http://127.0.0.1:9001 http://127.0.0.1:9002"
	got := everyWorkersHosts(t, tm)
	if len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return s != want }) {
		t.Fatalf("the workers' hosts: %q, want %q in all 3", got, want)
	}
	sets, err := tm.Upstreams()
	if err != nil || len(sets) != 1 || len(sets[0].Hosts) != 2 || sets[0].Worker == 0 {
		t.Errorf("Upstreams = %+v, %v", sets, err)
	}

	// A worker killed is replaced by one that starts with the change.
	var victim *worker
	tm.do(func() { victim = tm.cur.workers[1] })
	victim.cmd.Process.Signal(syscall.SIGKILL)
	sluicetest.WaitFor(t, "a replacement worker", func() bool {
		var ready bool
		tm.do(func() {
			w := tm.cur.workers[1]
			ready = w != nil && w != victim && w.ready
		})
		return ready
	})
	got = everyWorkersHosts(t, tm)
	if len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return s != want }) {
		t.Fatalf("after a replacement, the workers' hosts: %q, want %q in all 3", got, want)
	}

	// A new config's workers start with its own sets.
	tm.Reload()
	tm.waitLog(t, "reloaded", 1)
	got = everyWorkersHosts(t, tm)
	if len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return s != "http://127.0.0.1:9001" }) {
		t.Errorf("after a reload, the workers' hosts: %q, want the config's", got)
	}
}

// A config posted to Load is validated first (errors with their lines,
// nothing started), then served by new workers before Load returns; a
// purge through the master reaches every worker.
func TestMasterLoadAndPurge(t *testing.T) {
	tm, addr := startMaster(t, "listen: 127.0.0.1:0\nworkers: 2\nhealth: {interval: 50ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline: [{text: one}]\n")
	err := tm.Load([]byte("listen: " + addr + "\nworkers: 2\nroutes:\n  - match: /\n    pipeline: [{txet: two}]\n"))
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Line != 5 || errs[0].File != "test.yaml" {
		t.Fatalf("Load of a bad config: %v, want its error at line 5", err)
	}
	if err := tm.Load([]byte("listen: " + addr + "\nworkers: 2\nhealth: {interval: 50ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline: [{text: two}]\n")); err != nil {
		t.Fatalf("Load: %v\n%s", err, tm.log)
	}
	// Load returns once the old workers accept no more: every new
	// connection from then on reaches the new config.
	for i := range 50 {
		if _, body := sluicetest.Get(t, "http://"+addr+"/", "Connection", "close"); body != "two" {
			t.Fatalf("after Load, GET / #%d = %q, want two", i+1, body)
		}
	}
	// Holding nothing, the old workers then exit.
	tm.waitLog(t, "worker stopped", 2)
	if name, data := tm.Running(); name != "test.yaml" || !strings.Contains(string(data), "text: two") {
		t.Errorf("Running = %q %q", name, data)
	}
	n, processes, err := tm.Purge(components.Purge{Host: "a", URLs: []string{"/"}})
	if err != nil || processes != 2 || n != 0 {
		t.Errorf("Purge = %d, %d, %v; want 2 processes", n, processes, err)
	}
}
