package bench

import (
	"slices"
	"testing"
	"time"
)

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"0,2", []int{0, 2}},
		{"0-3,6", []int{0, 1, 2, 3, 6}},
		{" 2 , 4-5 ", []int{2, 4, 5}},
		{"", nil}, {"x", nil}, {"3-1", nil}, {"-1", nil}, {"1-", nil},
	} {
		if got := cpuList(c.in); !slices.Equal(got, c.want) {
			t.Errorf("cpuList(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// stat0 and stat1 are /proc/stat of a two-CPU machine 100 ticks apart:
// CPU 0 busy all the while (80 user, 15 system, 5 softirq), CPU 1 idle
// for 30 of them, 10 of which in iowait, and robbed of 20 by the
// hypervisor.
const (
	stat0 = "cpu  300 0 200 1000 10 0 50 20 0 0\n" +
		"cpu0 100 0 100 500 5 0 25 0 0 0\n" +
		"cpu1 200 0 100 500 5 0 25 20 0 0\n" +
		"intr 12345\nctxt 678\n"
	stat1 = "cpu  420 0 235 1020 20 0 60 40 0 0\n" +
		"cpu0 180 0 115 500 5 0 30 0 0 0\n" +
		"cpu1 225 0 120 520 15 0 30 40 0 0\n" +
		"intr 22345\nctxt 978\n"
)

func TestBusyPercent(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want float64
	}{
		{[]int{0}, 100},
		// CPU 1 ran 80 of its 100 ticks and was idle for 30 of them.
		{[]int{1}, 100 * 50.0 / 80},
		{[]int{0, 1}, 100 * 150.0 / 180},
	} {
		a, ok0 := parseCoreTimes(stat0, c.cpus)
		b, ok1 := parseCoreTimes(stat1, c.cpus)
		if !ok0 || !ok1 {
			t.Fatalf("parseCoreTimes(%v) failed", c.cpus)
		}
		if got := busyPercent(a, b); got != c.want {
			t.Errorf("busyPercent on CPUs %v = %v, want %v", c.cpus, got, c.want)
		}
	}
	if _, ok := parseCoreTimes(stat0, []int{2}); ok {
		t.Error("parseCoreTimes found a CPU the text does not have")
	}
	if _, ok := parseCoreTimes(stat0, nil); ok {
		t.Error("parseCoreTimes succeeded with no CPUs")
	}
	a, _ := parseCoreTimes(stat0, []int{0})
	if got := busyPercent(a, a); got != -1 {
		t.Errorf("busyPercent with no time passed = %v, want -1", got)
	}
}

// TestReadCoreTimes reads this machine's /proc/stat: CPU 0's total
// grows with time.
func TestReadCoreTimes(t *testing.T) {
	a, ok := readCoreTimes([]int{0})
	if !ok {
		t.Skip("no /proc/stat here")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, ok := readCoreTimes([]int{0})
		if !ok {
			t.Fatal("readCoreTimes failed the second time")
		}
		if b.total > a.total {
			if p := busyPercent(a, b); p < 0 || p > 100 {
				t.Fatalf("busyPercent = %v", p)
			}
			return
		}
	}
	t.Fatal("CPU 0's time in /proc/stat did not grow in 10 s")
}
