package report

import (
	"slices"
	"testing"
)

func TestSI(t *testing.T) {
	for v, want := range map[float64]string{250000: "250k", 1.5e6: "1.5M", 30000: "30k", 2500: "2.5k", 40: "40", 0.5: "0.5", 0: "0"} {
		if got := si(v); got != want {
			t.Errorf("si(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestLabelFormat: every label of a figure has one format, chosen by its
// largest value.
func TestLabelFormat(t *testing.T) {
	for _, c := range []struct {
		max  float64
		v    []float64
		want []string
	}{
		{54639, []float64{54639, 527}, []string{"54,639", "527"}},
		{61.7, []float64{61.7, 9}, []string{"61.7", "9.0"}},
		{4.206, []float64{4.206, 0.081}, []string{"4.21", "0.08"}},
	} {
		f := labelFormat(c.max)
		for i, v := range c.v {
			if got := f(v); got != c.want[i] {
				t.Errorf("labelFormat(%v)(%v) = %q, want %q", c.max, v, got, c.want[i])
			}
		}
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (siTicks{logTicks{}}).Ticks(0.3, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500", "1k", "2k", "5k", "10k"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels = %q, want %q", labels, want)
	}
}
