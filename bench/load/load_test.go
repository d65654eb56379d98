package load_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/engine"
)

// page is Warp's benchmark page size: 151 bytes.
var page = strings.Repeat("x", 150) + "\n"

// serve starts an engine.Server on a loopback port and returns its address.
func serve(t *testing.T) string {
	t.Helper()
	srv := &engine.Server{Handler: engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if string(r.Path) == "/missing" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteString(page)
	})}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// checkHistogram checks the invariants every run's latencies must hold.
func checkHistogram(t *testing.T, res *load.Result) {
	t.Helper()
	h := res.Latency
	if h.Count() != res.OK {
		t.Errorf("histogram holds %d latencies, want one per OK response (%d)", h.Count(), res.OK)
	}
	p50, p99 := h.Quantile(0.5), h.Quantile(0.99)
	if !(h.Min() > 0 && h.Min() <= p50 && p50 <= p99 && p99 <= h.Max()) {
		t.Errorf("quantiles out of order: min %v p50 %v p99 %v max %v", h.Min(), p50, p99, h.Max())
	}
	if m := h.Mean(); m < h.Min() || m > h.Max() {
		t.Errorf("mean %v outside [%v, %v]", m, h.Min(), h.Max())
	}
}

func TestClosedLoopPipelined(t *testing.T) {
	res, err := load.Run(context.Background(), load.Config{
		Addr: serve(t), Paths: []string{"/a", "/b"}, Conns: 4, Pipeline: 8, Duration: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || res.Errors.Total() != 0 {
		t.Fatalf("OK %d, errors %v (first: %v)", res.OK, res.Errors, res.FirstError)
	}
	if res.Conns != 4 || res.Attempted < res.OK {
		t.Errorf("conns %d attempted %d ok %d", res.Conns, res.Attempted, res.OK)
	}
	// Every response carries the page; heads are at least 17 bytes.
	if res.Bytes < res.OK*int64(len(page)+17) {
		t.Errorf("%d bytes for %d responses", res.Bytes, res.OK)
	}
	checkHistogram(t, res)
}

func TestRequestCount(t *testing.T) {
	for _, close := range []bool{false, true} {
		res, err := load.Run(context.Background(), load.Config{
			Addr: serve(t), Conns: 8, Requests: 500, Close: close,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK != 500 || res.Attempted != 500 || res.Errors.Total() != 0 {
			t.Errorf("close=%v: ok %d attempted %d errors %v", close, res.OK, res.Attempted, res.Errors)
		}
		checkHistogram(t, res)
	}
}

func TestOpenLoop(t *testing.T) {
	res, err := load.Run(context.Background(), load.Config{
		Addr: serve(t), Conns: 20, Rate: 400, Duration: time.Second, Close: true, Timeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The schedule is exact: Rate × Duration requests, each answered or
	// counted as an error.
	if res.Attempted != 400 {
		t.Errorf("attempted %d, want 400", res.Attempted)
	}
	if res.OK+res.Errors.Total() != res.Attempted {
		t.Errorf("ok %d + errors %d != attempted %d", res.OK, res.Errors.Total(), res.Attempted)
	}
	if res.OK == 0 {
		t.Fatalf("no response; first error %v", res.FirstError)
	}
	checkHistogram(t, res)
}

func TestStatusErrors(t *testing.T) {
	res, err := load.Run(context.Background(), load.Config{
		Addr: serve(t), Paths: []string{"/", "/missing"}, Requests: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 50 || res.Errors.Status != 50 {
		t.Errorf("ok %d, status errors %d; want 50 and 50", res.OK, res.Errors.Status)
	}
}

func TestRefused(t *testing.T) {
	res, err := load.Run(context.Background(), load.Config{Addr: "127.0.0.1:1", Requests: 10, Close: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Errors.Connect == 0 {
		t.Errorf("against a closed port: ok %d, errors %v", res.OK, res.Errors)
	}
}

func TestHistogram(t *testing.T) {
	var h load.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != 1000 || h.Min() != time.Microsecond || h.Max() != time.Millisecond {
		t.Fatalf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		want := time.Duration(q*1000) * time.Microsecond
		got := h.Quantile(q)
		if d := float64(got-want) / float64(want); d < -0.02 || d > 0.02 {
			t.Errorf("Quantile(%v) = %v, want %v within 2%%", q, got, want)
		}
	}
	var sum load.Histogram
	sum.Merge(&h)
	sum.Merge(&h)
	if sum.Count() != 2000 || sum.Quantile(0.5) != h.Quantile(0.5) || sum.Mean() != h.Mean() {
		t.Errorf("merged: count %d p50 %v mean %v", sum.Count(), sum.Quantile(0.5), sum.Mean())
	}
}

// Held connections are answered again when they speak again; those the
// server has closed meanwhile are counted as failed and no longer held.
func TestHoldAgain(t *testing.T) {
	srv := &engine.Server{Handler: engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString(page)
	})}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	ctx := context.Background()
	h := load.Hold(ctx, ln.Addr().String(), "/", 20, 5, 10*time.Second)
	defer h.Close()
	if h.OK != 20 || h.Failed != 0 {
		t.Fatalf("Hold: OK %d, failed %d (%v)", h.OK, h.Failed, h.Err)
	}
	if n := h.Again(ctx, 5, 10*time.Second); n != 20 || h.OK != 20 {
		t.Fatalf("Again: %d answered, OK %d, failed %d (%v); want 20", n, h.OK, h.Failed, h.Err)
	}
	srv.Close()
	if n := h.Again(ctx, 5, 10*time.Second); n != 0 || h.OK != 0 || h.Failed != 20 || h.Err == nil {
		t.Fatalf("Again after Close: %d answered, OK %d, failed %d (%v); want 0, 0, 20 and an error", n, h.OK, h.Failed, h.Err)
	}
}
