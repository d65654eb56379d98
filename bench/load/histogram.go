package load

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram bucket layout, after HdrHistogram: values below subCount
// nanoseconds get a bucket each; above, every power-of-two range is split
// into half linear sub-buckets, so a recorded value is known to within
// 1/half (under 1.6 %) across the whole range.
const (
	subBits  = 7
	subCount = 1 << subBits // 128
	half     = subCount / 2 // 64
	nBuckets = (64-subBits+1)*half + half
)

// Histogram records durations in log-linear buckets. Record and the
// readers are safe for concurrent use (counts are updated atomically), so
// one Histogram can be shared by every connection of a run. The zero value
// is an empty histogram.
type Histogram struct {
	counts [nBuckets]atomic.Int64
	n      atomic.Int64
	sum    atomic.Int64 // nanoseconds
	min    atomic.Int64 // nanoseconds + 1; 0 means none yet
	max    atomic.Int64 // nanoseconds
}

// bucket returns the index of the bucket holding v nanoseconds.
func bucket(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits
	return (shift+1)*half + int(v>>shift) - half
}

// bounds returns the smallest and largest value bucket i holds.
func bounds(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	shift := i/half - 1
	sub := int64(i%half + half)
	return sub << shift, (sub+1)<<shift - 1
}

// Record adds one observation; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucket(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && v+1 >= m) || h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
}

// Merge adds every observation of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	h.sum.Add(o.sum.Load())
	if m := o.max.Load(); m > h.max.Load() {
		h.max.Store(m)
	}
	if m := o.min.Load(); m != 0 && (h.min.Load() == 0 || m < h.min.Load()) {
		h.min.Store(m)
	}
}

// Count is the number of observations.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Mean is the exact mean of the observations, 0 if there are none.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Max is the largest observation, exact.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min is the smallest observation, exact; 0 if there are none.
func (h *Histogram) Min() time.Duration {
	if m := h.min.Load(); m > 0 {
		return time.Duration(m - 1)
	}
	return 0
}

// Quantile returns the value at quantile q (0 ≤ q ≤ 1): the middle of the
// bucket holding the ⌈q·n⌉-th smallest observation, clamped to the exact
// minimum and maximum. It returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := bounds(i)
			v := time.Duration(lo + (hi-lo)/2)
			return min(max(v, h.Min()), h.Max())
		}
	}
	return h.Max()
}
