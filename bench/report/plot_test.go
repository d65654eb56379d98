package report

import (
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestValueLabel: ticks and bar labels read 250k, not 250000.00; three
// significant figures at most, one rule for every value.
func TestValueLabel(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{250000, "250k"}, {1.5e6, "1.5M"}, {10000, "10k"}, {30000, "30k"}, {2500, "2.5k"},
		{272645, "273k"}, {234983, "235k"}, {54639, "54.6k"}, {35469, "35.5k"}, {1000, "1k"},
		{999.7, "1k"}, {999600, "1M"}, {4003, "4k"}, {527, "527"}, {107.0, "107"}, {17.4, "17.4"},
		{16.2, "16.2"}, {2.4, "2.4"}, {4.206, "4.21"}, {0.5, "0.5"}, {0.069, "0.069"}, {0.0812, "0.0812"},
		{40, "40"}, {0, "0"}, {0.30000000000000004, "0.3"}, {-1500, "-1.5k"},
	} {
		if got := valueLabel(c.v); got != c.want {
			t.Errorf("valueLabel(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestMsLabel: millisecond axes read 500 µs, 2 ms, 1.5 s.
func TestMsLabel(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{
		{0.5, "500 µs"}, {0.0512, "51.2 µs"}, {2, "2 ms"}, {16.27, "16.3 ms"}, {250, "250 ms"},
		{1500, "1.5 s"}, {999.9, "1 s"}, {0.9996, "1 ms"}, {0, "0"},
	} {
		if got := msLabel(c.ms); got != c.want {
			t.Errorf("msLabel(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
}

func TestAxisFormat(t *testing.T) {
	if l, f := axisFormat("mean request time (ms)"); l != "mean request time" || f(0.25) != "250 µs" {
		t.Errorf(`axisFormat("mean request time (ms)") = %q, f(0.25) = %q`, l, f(0.25))
	}
	if l, f := axisFormat("requests/s"); l != "requests/s" || f(250000) != "250k" {
		t.Errorf(`axisFormat("requests/s") = %q, f(250000) = %q`, l, f(250000))
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (labelTicks{logTicks{}, valueLabel}).Ticks(0.3, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500", "1k", "2k", "5k", "10k"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels = %q, want %q", labels, want)
	}
}

// TestLinearTicks: gonum's default ticks, relabelled, have no decimals
// on round values.
func TestLinearTicks(t *testing.T) {
	for _, tk := range (labelTicks{plot.DefaultTicks{}, valueLabel}).Ticks(0, 260000) {
		if tk.Label != "" && !slices.Contains([]string{"0", "50k", "100k", "150k", "200k", "250k"}, tk.Label) {
			t.Errorf("tick %v labelled %q", tk.Value, tk.Label)
		}
	}
}

// TestLegendOutsideData: the legend, however many and long its entries,
// is laid out to the right of the plot's data area and never over it.
func TestLegendOutsideData(t *testing.T) {
	for _, n := range []int{1, 3, 12} {
		p := plot.New()
		p.Title.Text = "title"
		p.X.Label.Text, p.Y.Label.Text = "connections", "requests/s"
		legend := newLegend()
		for i := range n {
			line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(i)}, {X: 1000, Y: float64(i) * 1000}})
			if err != nil {
				t.Fatal(err)
			}
			p.Add(line)
			legend.Add(string(rune('a'+i))+"-a-rather-long-server-name", line)
		}
		dc := draw.New(vgimg.New(8*vg.Inch, 5*vg.Inch))
		plotArea, legendArea := layout(dc, legend)
		if legendArea == nil {
			t.Fatalf("%d entries: no legend area", n)
		}
		data := p.DataCanvas(plotArea).Rectangle
		leg := legend.Rectangle(*legendArea)
		if leg.Min.X < data.Max.X {
			t.Errorf("%d entries: legend %v overlaps the data area %v", n, leg, data)
		}
		if leg.Max.X > dc.Max.X {
			t.Errorf("%d entries: legend %v runs off the figure (%v)", n, leg, dc.Rectangle)
		}
		if data.Max.X-data.Min.X < dc.Max.X/2 {
			t.Errorf("%d entries: the data area %v is less than half the figure", n, data)
		}
	}
	if _, area := layout(draw.New(vgimg.New(8*vg.Inch, 5*vg.Inch)), newLegend()); area != nil {
		t.Errorf("an empty legend has an area")
	}
}
