package metrics

import (
	"sync/atomic"
	"time"
)

// Buckets are the upper bounds of the latency histograms, from half a
// millisecond to ten seconds; a last bucket (+Inf) takes the rest. They
// are fixed, so that observing is a comparison and two atomic additions.
var Buckets = [...]time.Duration{
	500 * time.Microsecond,
	1 * time.Millisecond,
	2500 * time.Microsecond,
	5 * time.Millisecond,
	10 * time.Millisecond,
	25 * time.Millisecond,
	50 * time.Millisecond,
	100 * time.Millisecond,
	250 * time.Millisecond,
	500 * time.Millisecond,
	1 * time.Second,
	2500 * time.Millisecond,
	5 * time.Second,
	10 * time.Second,
}

// Histogram counts durations in Buckets. Its methods are safe for
// concurrent use and allocate nothing; the zero value is an empty
// histogram.
type Histogram struct {
	counts [len(Buckets) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64                   // nanoseconds
}

// Observe counts d (a negative d counts as 0).
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(Buckets) && d > Buckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(uint64(d))
}

// HistogramSnapshot is a Histogram at one moment: Counts per bucket of
// Buckets then +Inf (not cumulative), and Sum, the total duration in
// seconds.
type HistogramSnapshot struct {
	Counts []uint64 `json:"c"`
	Sum    float64  `json:"s"`
}

// Snapshot returns the counts now; each is read atomically, the set is
// not one atomic view.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Sum = time.Duration(h.sum.Load()).Seconds()
	return s
}

// Count is the number of durations observed.
func (s HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Classes counts responses by status class, 1xx to 5xx. Safe for
// concurrent use; the zero value is ready.
type Classes [5]atomic.Uint64

// Add counts one response of status code (one outside 100–599 is not
// counted).
func (c *Classes) Add(code int) {
	if i := code/100 - 1; i >= 0 && i < len(c) && code >= 100 {
		c[i].Add(1)
	}
}

// Snapshot returns the counts, 1xx first.
func (c *Classes) Snapshot() [5]uint64 {
	var s [5]uint64
	for i := range c {
		s[i] = c[i].Load()
	}
	return s
}

// ClassName is the label of class i of Classes: "1xx" … "5xx".
func ClassName(i int) string { return string(rune('1'+i)) + "xx" }
