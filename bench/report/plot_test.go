package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestValueLabel: ticks read 250k, not 250000.00: three significant
// figures at most, trailing zeros dropped.
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
		if got := (numberFormat{}).tick(c.v); got != c.want {
			t.Errorf("tick(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestBarLabel: every bar label shows three significant figures, zeros
// kept, so that one figure's labels read alike.
func TestBarLabel(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{272645, "273k"}, {31790, "31.8k"}, {4003, "4.00k"}, {527, "527"}, {107.0, "107"},
		{17.4, "17.4"}, {2.4, "2.40"}, {10, "10.0"}, {0.069, "0.0690"}, {999.7, "1.00k"}, {1.5e6, "1.50M"},
	} {
		if got := (numberFormat{}).bar(c.v); got != c.want {
			t.Errorf("bar(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestMsLabel: millisecond axes read 500 µs, 2 ms, 1.5 s.
func TestMsLabel(t *testing.T) {
	ms := numberFormat{ms: true}
	for _, c := range []struct {
		ms        float64
		tick, bar string
	}{
		{0.5, "500 µs", "500 µs"}, {0.0512, "51.2 µs", "51.2 µs"}, {2, "2 ms", "2.00 ms"},
		{16.27, "16.3 ms", "16.3 ms"}, {250, "250 ms", "250 ms"}, {1500, "1.5 s", "1.50 s"},
		{999.9, "1 s", "1.00 s"}, {0.9996, "1 ms", "1.00 ms"}, {0, "0", "0"},
	} {
		if got := ms.tick(c.ms); got != c.tick {
			t.Errorf("tick(%v ms) = %q, want %q", c.ms, got, c.tick)
		}
		if got := ms.bar(c.ms); got != c.bar {
			t.Errorf("bar(%v ms) = %q, want %q", c.ms, got, c.bar)
		}
	}
}

func TestAxisFormat(t *testing.T) {
	if l, f := axisFormat("mean request time (ms)"); l != "mean request time" || f.tick(0.25) != "250 µs" {
		t.Errorf(`axisFormat("mean request time (ms)") = %q, tick(0.25) = %q`, l, f.tick(0.25))
	}
	if l, f := axisFormat("requests/s"); l != "requests/s" || f.tick(250000) != "250k" {
		t.Errorf(`axisFormat("requests/s") = %q, tick(250000) = %q`, l, f.tick(250000))
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (labelTicks{logTicks{}, numberFormat{}}).Ticks(0.3, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500", "1k", "2k", "5k", "10k"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels = %q, want %q", labels, want)
	}
}

// TestLinearTicks: a linear axis gets four to seven labels at a round
// step, written as every other label of its figure (250k, 1.25 s), where
// gonum's default ticks labelled as few as two (0 and 250k).
func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		ms     bool
		want   []string
	}{
		{0, 282000, false, []string{"0", "50k", "100k", "150k", "200k", "250k"}}, // pipelined.png
		{0, 260000, false, []string{"0", "50k", "100k", "150k", "200k", "250k"}},
		{0, 51000, false, []string{"0", "10k", "20k", "30k", "40k", "50k"}}, // c10k.png
		{0, 128, false, []string{"0", "25", "50", "75", "100", "125"}},      // headline.png
		{0, 4460, false, []string{"0", "1k", "2k", "3k", "4k"}},
		{2000, 30000, false, []string{"5k", "10k", "15k", "20k", "25k", "30k"}},
		{0, 98, false, []string{"0", "20", "40", "60", "80"}},
		{0, 1.5e6, false, []string{"0", "250k", "500k", "750k", "1M", "1.25M", "1.5M"}},
		{0, 1300, true, []string{"0", "250 ms", "500 ms", "750 ms", "1 s", "1.25 s"}}, // mix-p99.png
		{0, 6240, true, []string{"0", "2 s", "4 s", "6 s"}},
		{0, 5.05, true, []string{"0", "1 ms", "2 ms", "3 ms", "4 ms", "5 ms"}},
		{0, 0.3, true, []string{"0", "50 µs", "100 µs", "150 µs", "200 µs", "250 µs", "300 µs"}},
	} {
		var labels []string
		for _, tk := range (labelTicks{niceTicks{}, numberFormat{ms: c.ms}}).Ticks(c.lo, c.hi) {
			if tk.Value < c.lo || tk.Value > c.hi {
				t.Errorf("[%v, %v]: tick %v outside the axis", c.lo, c.hi, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, c.want) {
			t.Errorf("[%v, %v]: labels %q, want %q", c.lo, c.hi, labels, c.want)
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
		plotArea, legendArea, noteAt := layout(dc, legend, true)
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
		if plotArea.Min.Y < dc.Min.Y+noteHeight || leg.Min.Y < dc.Min.Y+noteHeight || noteAt.Y >= dc.Min.Y+noteHeight {
			t.Errorf("%d entries: the note at %v is not in a strip of its own below the plot (%v) and legend (%v)", n, noteAt, plotArea.Rectangle, leg)
		}
		if data.Max.X-data.Min.X < dc.Max.X/2 {
			t.Errorf("%d entries: the data area %v is less than half the figure", n, data)
		}
	}
	if _, area, _ := layout(draw.New(vgimg.New(8*vg.Inch, 5*vg.Inch)), newLegend(), false); area != nil {
		t.Errorf("an empty legend has an area")
	}
}

// TestFigureNote: every figure names the commit and date it was measured
// at.
func TestFigureNote(t *testing.T) {
	started := time.Date(2026, 11, 22, 7, 1, 0, 0, time.UTC)
	w := &writer{dir: "out", rep: &Report{Started: started, Machine: []string{"CPU: test", "sluice commit: 45cd051-dirty"}}}
	if got, want := w.fig("headline.png"), (figFile{path: filepath.Join("out", "headline.png"), note: "measured at commit 45cd051-dirty, 2026-11-22"}); got != want {
		t.Errorf("fig = %+v, want %+v", got, want)
	}
	w.rep.Machine = nil
	if got := w.fig("headline.png").note; got != "measured 2026-11-22" {
		t.Errorf("without a commit, note = %q", got)
	}
}

// TestBarsReadTopDown: a bar figure lists its labels from the top, as
// the tables beside it do, and a group's value labels sit at its bars.
func TestBarsReadTopDown(t *testing.T) {
	bp := barPanel{title: "t", xLabel: "requests/s", labels: []string{"sluice", "nginx", "h2o"}, groups: []string{"151 B", "80 KB"},
		values: [][]Stat{{{Med: 3}, {Med: 2}, {Med: 1}}, {{Med: 30}, {Med: 20}, {Med: 10}}}}
	p, _, _, err := bp.plot()
	if err != nil {
		t.Fatal(err)
	}
	var top plot.Tick
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" && (top.Label == "" || tk.Value > top.Value) {
			top = tk
		}
	}
	if top.Label != "sluice" {
		t.Errorf("top label %q, want sluice", top.Label)
	}
	if a, b := groupOffset(0, 2, vg.Points(14)), groupOffset(1, 2, vg.Points(14)); a <= b {
		t.Errorf("group offsets %v, %v: the first group's bars are not above the second's", a, b)
	}
}

// TestWrapTitle: a title wider than its plot breaks at the space nearest
// its middle; one that fits stays.
func TestWrapTitle(t *testing.T) {
	sty := plot.New().Title.TextStyle
	long := "Server CPU-µs per proxied request: 151-byte page, 100 keep-alive connections (lower is better)"
	if got := wrapTitle(sty, long, sty.Width(long)+1); got != long {
		t.Errorf("a title that fits was wrapped: %q", got)
	}
	got := wrapTitle(sty, long, sty.Width(long)/2+vg.Points(20))
	first, second, ok := strings.Cut(got, "\n")
	if !ok || first+" "+second != long {
		t.Fatalf("wrapTitle = %q", got)
	}
	if d := len(first) - len(second); d > 12 || d < -12 {
		t.Errorf("lines of %d and %d bytes: not broken near the middle", len(first), len(second))
	}
}
