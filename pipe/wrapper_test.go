package pipe

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// nester is a test Wrapper: it runs the rest of the pipeline and nests a
// recording filter between the rest's filters and the earlier ones, as a
// cache does.
type nester struct {
	mu   sync.Mutex
	seen bytes.Buffer
	rest bool // whether HandleRest ran
}

func (n *nester) Handle(c *Conn) bool { return n.HandleRest(c, nil) }

func (n *nester) HandleRest(c *Conn, rest Component) bool {
	n.mu.Lock()
	n.rest = true
	n.mu.Unlock()
	mark := c.FilterMark()
	ok := true
	if rest != nil {
		ok = rest.Handle(c)
	}
	c.NestFilters(mark, func(c *Conn) Wrap {
		c.Header().Add("X-Filters", "tap")
		return func(next Writer) Writer { return &recorder{n: n, next: next} }
	})
	return ok
}

type recorder struct {
	n    *nester
	next Writer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.n.mu.Lock()
	r.n.seen.Write(p)
	r.n.mu.Unlock()
	return r.next.Write(p)
}
func (r *recorder) Flush() error { return r.next.Flush() }
func (r *recorder) Close() error { return nil }

// A Wrapper in a Chain or a ProcNetwork gets the rest of the pipeline, and
// NestFilters puts its filter beneath the rest's filters and above the
// earlier ones: the content passes shift (the rest's), tap, then upper
// (added before the Wrapper).
func TestWrapperNestsFilters(t *testing.T) {
	for _, network := range []bool{false, true} {
		n := &nester{}
		var b Builder
		b.Network = network
		comp := b.Pipeline(upper, n, text("hal"), shift)
		defer b.Stop()
		url := sluicetest.NewServer(t, Handler(comp)).URL
		resp, body := sluicetest.Get(t, url+"/")
		if body != "HAL" {
			t.Errorf("network=%v: body = %q, want HAL (shift on lower case does nothing, then upper)", network, body)
		}
		if got := strings.Join(resp.Header.Values("X-Filters"), ","); got != "shift,tap,upper" {
			t.Errorf("network=%v: X-Filters = %q, want shift,tap,upper", network, got)
		}
		n.mu.Lock()
		if !n.rest || n.seen.String() != "hal" {
			t.Errorf("network=%v: HandleRest ran %v, tap saw %q, want hal", network, n.rest, n.seen.String())
		}
		n.mu.Unlock()
	}
}

// With no filter before the Wrapper, NestFilters appends its filter after
// the rest's; with a nil filter it only reorders.
func TestNestFiltersEdges(t *testing.T) {
	n := &nester{}
	url := sluicetest.NewServer(t, Handler(Chain{n, text("hal"), upper})).URL
	resp, body := sluicetest.Get(t, url+"/")
	if body != "HAL" || strings.Join(resp.Header.Values("X-Filters"), ",") != "upper,tap" {
		t.Errorf("body %q, X-Filters %v", body, resp.Header.Values("X-Filters"))
	}
	if n.seen.String() != "HAL" {
		t.Errorf("tap saw %q, want HAL", n.seen.String())
	}
	reorder := Pipe(func(c *Conn) bool {
		mark := c.FilterMark()
		c.AddFilter(shift)
		c.NestFilters(mark, nil)
		return true
	})
	url = sluicetest.NewServer(t, Handler(Chain{upper, reorder, text("hal")})).URL
	if _, body := sluicetest.Get(t, url+"/"); body != "HAL" {
		t.Errorf("reordered body = %q, want HAL (shift before upper)", body)
	}
}

type abortRecorder struct {
	next    Writer
	aborted chan error
}

func (a *abortRecorder) Write(p []byte) (int, error) { return a.next.Write(p) }
func (a *abortRecorder) Flush() error                { return a.next.Flush() }
func (a *abortRecorder) Close() error                { return nil }
func (a *abortRecorder) Abort(err error)             { a.aborted <- err }

// A content that fails after committing makes Finish call Abort on the
// filter writers that implement Aborter; one that succeeds does not.
func TestAborter(t *testing.T) {
	aborted := make(chan error, 2)
	filter := Filter(func(c *Conn) Wrap {
		return func(next Writer) Writer { return &abortRecorder{next: next, aborted: aborted} }
	})
	failing := Source(func(c *Conn) Content {
		if c.Request.IsMethod("POST") {
			return func(w Writer) error { _, err := w.Write([]byte("fine")); return err }
		}
		return func(w Writer) error {
			w.Write([]byte("part"))
			w.Flush()
			return errors.New("upstream broke off")
		}
	})
	srv := sluicetest.NewServer(t, Handler(Chain{filter, failing}))
	resp, err := sluicetest.Client.Get(srv.URL + "/")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Errorf("a response whose content failed came out whole")
	}
	if got := <-aborted; got == nil || got.Error() != "upstream broke off" {
		t.Errorf("Abort got %v", got)
	}
	if _, body := sluicetest.Send(t, "POST", srv.URL+"/"); body != "fine" {
		t.Errorf("POST body %q", body)
	}
	select {
	case err := <-aborted:
		t.Errorf("Abort called for a content that succeeded: %v", err)
	default:
	}
}

// Finished tells a Wrapper that its rest finished the response inside its
// own call, as net/http middleware does, and not otherwise.
func TestFinished(t *testing.T) {
	seen := make(chan bool, 2)
	probe := &finishProbe{seen: seen}
	mw := Middleware(func(next http.Handler) http.Handler { return next })
	url := sluicetest.NewServer(t, Handler(Chain{probe, mw, text("x")})).URL
	if _, body := sluicetest.Get(t, url+"/"); body != "x" {
		t.Errorf("body %q", body)
	}
	if !<-seen {
		t.Errorf("Finished is false after middleware ran the content phase")
	}
	url = sluicetest.NewServer(t, Handler(Chain{probe, text("y")})).URL
	sluicetest.Get(t, url+"/")
	if <-seen {
		t.Errorf("Finished is true before the content phase")
	}
}

type finishProbe struct{ seen chan bool }

func (p *finishProbe) Handle(c *Conn) bool { return true }
func (p *finishProbe) HandleRest(c *Conn, rest Component) bool {
	ok := rest.Handle(c)
	p.seen <- c.Finished()
	return ok
}

// After DetachGone, Gone is nil for the components that ask later.
func TestDetachGone(t *testing.T) {
	got := make(chan bool, 2)
	probe := Pipe(func(c *Conn) bool { got <- c.Gone() == nil; return true })
	detach := Pipe(func(c *Conn) bool { c.DetachGone(); return true })
	url := sluicetest.NewServer(t, Handler(Chain{probe, detach, probe, text("x")})).URL
	sluicetest.Get(t, url+"/")
	if before, after := <-got, <-got; after != true || runtime.GOOS == "linux" && before {
		t.Errorf("Gone nil before DetachGone: %v, after: %v", before, after)
	}
	// A pooled Conn forgets it.
	url = sluicetest.NewServer(t, Handler(Chain{probe, text("y")})).URL
	sluicetest.Get(t, url+"/")
	if nilGone := <-got; runtime.GOOS == "linux" && nilGone {
		t.Errorf("Gone is nil on a later request")
	}
}
