package engine

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Streams one after another run on one reused goroutine, and the reaper's
// stop ends the idle ones.
func TestStreamRunnersReused(t *testing.T) {
	s, addr := h2cServer(t, HandlerFunc(func(w ResponseWriter, r *Request) {
		io.WriteString(w, "ok")
	}), Limits{})
	c := h2cClient(t, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
	get := func() {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("answer %q", b)
		}
	}
	// A stream takes a runner for its handler and, while the handler
	// runs, may take another for the write it hands over (writeNow):
	// one or two runners, all idle once the stream is answered.
	settled := func(what string) {
		t.Helper()
		waitFor(t, what, func() bool {
			s.taskRunners.mu.Lock()
			defer s.taskRunners.mu.Unlock()
			return s.taskRunners.busy == 0 && len(s.taskRunners.idle) >= 1
		})
	}
	get()
	settled("the first stream's runners idle")
	before := taskRunnersStarted.Load()
	for range 50 {
		get()
		settled("the stream's runners idle again")
	}
	// At most the second runner, if the first stream needed one only.
	if n := taskRunnersStarted.Load() - before; n > 1 {
		t.Errorf("50 streams one after another started %d goroutines, want at most 1", n)
	}
	s.taskRunners.reap(0, true)
	if n := s.taskRunners.count(); n != 0 {
		t.Errorf("%d idle runners after a reap of all", n)
	}
}

// As many task runners wait as ran at once in the reaper's last period:
// with more tasks in flight than maxIdleRunners, a second wave runs on
// the first's goroutines rather than starting new ones.
func TestTaskRunnersFollowTheLoad(t *testing.T) {
	s := &Server{}
	s.init()
	defer s.Close()
	const n = maxIdleRunners + 44
	wave := func() {
		var started, done sync.WaitGroup
		release := make(chan struct{})
		started.Add(n)
		done.Add(n)
		for range n {
			s.runTask(func() {
				started.Done()
				<-release
				done.Done()
			})
		}
		started.Wait()
		close(release)
		done.Wait()
	}
	wave()
	waitFor(t, "the first wave's runners idle", func() bool { return s.taskRunners.count() == maxIdleRunners })
	// The reaper's period ends (by hand here; its own ticks may come
	// too, and one between a reap and a wave forgets the peak: try again).
	for try := 0; ; try++ {
		s.taskRunners.reap(0, false)
		before := taskRunnersStarted.Load()
		wave()
		// Every task done and its runner back (or gone, past keep).
		waitFor(t, "the wave's runners idle", func() bool {
			s.taskRunners.mu.Lock()
			defer s.taskRunners.mu.Unlock()
			return s.taskRunners.busy == 0 && len(s.taskRunners.idle) >= maxIdleRunners
		})
		if s.taskRunners.count() == n {
			if started := taskRunnersStarted.Load() - before; started > n-maxIdleRunners {
				t.Fatalf("the wave started %d goroutines, want at most %d", started, n-maxIdleRunners)
			}
			break
		}
		if try == 2 {
			t.Fatalf("%d runners wait after a wave of %d, want all of them", s.taskRunners.count(), n)
		}
	}
	before := taskRunnersStarted.Load()
	wave()
	if started := taskRunnersStarted.Load() - before; started != 0 {
		t.Errorf("a wave as large as the last period's peak started %d goroutines, want 0", started)
	}
}
