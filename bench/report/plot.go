package report

import (
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one server's line: medians with min/max error bars.
type series struct {
	name string
	idx  int // colour and glyph, the same for a server in every figure
	x    []float64
	y    []Stat
}

// lineFigure plots series against X, optionally on log axes, and saves
// it as PNG at path, with the legend beside the plot. An axis label
// ending in " (ms)" marks milliseconds: its ticks read 500 µs, 2 ms, 1.5 s
// and the suffix is dropped.
func lineFigure(f figFile, title, xLabel, yLabel string, logX, logY bool, ss []series, extra ...plot.Plotter) error {
	p := plot.New()
	p.Title.Text = title
	p.Add(plotter.NewGrid())
	var xFmt, yFmt numberFormat
	p.X.Label.Text, xFmt = axisFormat(xLabel)
	p.Y.Label.Text, yFmt = axisFormat(yLabel)
	p.X.Tick.Marker = labelTicks{niceTicks{}, xFmt}
	p.Y.Tick.Marker = labelTicks{niceTicks{}, yFmt}
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = labelTicks{logTicks{}, xFmt}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = labelTicks{logTicks{}, yFmt}
	} else {
		p.Y.Min = 0
	}
	legend := newLegend()
	for _, e := range extra {
		p.Add(e)
	}
	for _, s := range ss {
		var xys plotter.XYs
		var errs plotter.YErrors
		for j, x := range s.x {
			y := s.y[j]
			if (logX && x <= 0) || (logY && y.Med <= 0) || math.IsNaN(y.Med) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y.Med})
			low, high := y.Med-y.Min, y.Max-y.Med
			if logY && y.Min <= 0 {
				low = 0
			}
			errs = append(errs, struct{ Low, High float64 }{low, high})
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = colorOf(s.idx)
		line.Width = vg.Points(1.5)
		if s.name == "sluice" {
			line.Width = vg.Points(3)
		}
		points.Color = colorOf(s.idx)
		points.Shape = plotutil.Shape(s.idx)
		bars := &plotter.YErrorBars{XYs: xys, YErrors: errs, LineStyle: draw.LineStyle{Color: colorOf(s.idx), Width: vg.Points(1)}, CapWidth: vg.Points(4)}
		p.Add(line, points, bars)
		legend.Add(s.name, line, points)
	}
	return save([]*plot.Plot{p}, legend, 8*vg.Inch, 5*vg.Inch, f)
}

// barFigure draws horizontal bars (one group per entry of groups, each
// with its own legend name) and saves them as PNG at path. The bars read
// like a table: labels[0] at the top, and within a label, groups[0]'s bar
// on top, as in the legend. A NaN value
// (not measured) gets neither bar nor label. Every value label has the
// axis's numberFormat: three significant figures (or milliseconds, for an
// xLabel ending in " (ms)").
func barFigure(f figFile, title, xLabel string, labels []string, groups []string, values [][]Stat) error {
	return barPanels(f, 8*vg.Inch, barPanel{title, xLabel, labels, groups, values})
}

// barPanel is one panel of horizontal bars: values[g][i] is group g's
// bar for labels[i].
type barPanel struct {
	title, xLabel string
	labels        []string
	groups        []string
	values        [][]Stat
}

// barPanels draws panels side by side in a figure w wide, each as
// barFigure draws one, with the first panel's legend (the panels share
// their groups) to the right of them all, and saves it as PNG at path.
func barPanels(f figFile, w vg.Length, panels ...barPanel) error {
	var ps []*plot.Plot
	var legend plot.Legend
	h := 3 * vg.Inch
	for i, bp := range panels {
		p, l, ph, err := bp.plot()
		if err != nil {
			return err
		}
		if i == 0 {
			legend = l
		}
		ps = append(ps, p)
		h = max(h, ph)
	}
	return save(ps, legend, w, h, f)
}

// plot builds the panel's plot, its legend (empty for one group) and the
// height it needs.
func (bp barPanel) plot() (*plot.Plot, plot.Legend, vg.Length, error) {
	labels, groups, values := bp.labels, bp.groups, bp.values
	p := plot.New()
	p.Title.Text = bp.title
	var format numberFormat
	p.X.Label.Text, format = axisFormat(bp.xLabel)
	p.X.Min = 0
	p.X.Tick.Marker = labelTicks{niceTicks{}, format}
	p.Add(plotter.NewGrid())
	legend := newLegend()
	n := len(groups)
	w := vg.Points(14)
	maxV := 0.0
	for _, vs := range values {
		for _, v := range vs {
			if !math.IsNaN(v.Med) {
				maxV = max(maxV, math.Abs(v.Med))
			}
		}
	}
	for g, name := range groups {
		// Bar i at y = len(labels)-1-i: the first label on top.
		vals := make(plotter.Values, len(labels))
		for i := range labels {
			vals[len(labels)-1-i] = values[g][i].Med
			if math.IsNaN(values[g][i].Med) {
				vals[len(labels)-1-i] = 0 // not measured: no bar, no label
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, legend, 0, err
		}
		b.Horizontal = true
		b.Color = colorOf(g)
		b.LineStyle.Width = 0
		b.Offset = groupOffset(g, n, w)
		p.Add(b)
		if n > 1 {
			legend.Add(name, b)
		}
		// Value labels at the bar ends.
		var xys plotter.XYs
		var texts []string
		for i := range labels {
			y := len(labels) - 1 - i
			xys = append(xys, plotter.XY{X: vals[y], Y: float64(y)})
			if math.IsNaN(values[g][i].Med) {
				texts = append(texts, "")
			} else {
				texts = append(texts, " "+format.bar(vals[y]))
			}
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return nil, legend, 0, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].YAlign = draw.YCenter
			lab.TextStyle[i].Font.Size = vg.Points(9)
		}
		lab.Offset = vg.Point{Y: b.Offset}
		p.Add(lab)
	}
	top := slices.Clone(labels)
	slices.Reverse(top)
	p.NominalY(top...)
	// Each label's bars span half a slot either side of it: keep the
	// outer ones inside the axes.
	p.Y.Min, p.Y.Max = -0.5, float64(len(labels))-0.5
	p.X.Max = maxV * 1.2
	return p, legend, vg.Points(float64(len(labels)*(14*n+12)) + 90), nil
}

// groupOffset is the vertical offset of group g's bars, of n groups of
// bars w thick: the first on top.
func groupOffset(g, n int, w vg.Length) vg.Length {
	return w * vg.Length(float64(n-1)/2-float64(g))
}

// axisFormat returns an axis's label and the format of its values:
// milliseconds for a label ending in " (ms)", which it drops, else plain
// numbers.
func axisFormat(label string) (string, numberFormat) {
	if l, ok := strings.CutSuffix(label, " (ms)"); ok {
		return l, numberFormat{ms: true}
	}
	return label, numberFormat{}
}

// numberFormat is the one format of an axis's ticks and of a figure's
// value labels: three significant figures, with k and M (250k, 1.5M) or,
// for milliseconds, in the unit that reads best (500 µs, 2 ms, 1.5 s).
// Ticks drop trailing zeros (2.5k, not 2.50k); bar labels keep them, so
// that every label of a figure shows three figures (4.00k, 17.4, 2.40).
type numberFormat struct{ ms bool }

// tick formats a tick's value.
func (f numberFormat) tick(v float64) string {
	if f.ms {
		return msLabel(v, false)
	}
	return valueLabel(v, false)
}

// bar formats a bar's value label.
func (f numberFormat) bar(v float64) string {
	if f.ms {
		return msLabel(v, true)
	}
	return valueLabel(v, true)
}

// labelTicks relabels another ticker's labelled ticks with format.
type labelTicks struct {
	plot.Ticker
	format numberFormat
}

// Ticks implements plot.Ticker.
func (t labelTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.Ticker.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = t.format.tick(ticks[i].Value)
		}
	}
	return ticks
}

// valueLabel writes v to three significant figures with k and M for
// thousands and millions: 250k, 1.5M, 273k, 17.4, 107, 0.05. With zeros,
// trailing zeros stay (4.00k, 2.40); without, they go (4k, 2.4).
func valueLabel(v float64, zeros bool) string {
	a := math.Abs(v)
	switch {
	case a == 0 || math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case round3(a) >= 1e6:
		return sig3(v/1e6, zeros) + "M"
	case round3(a) >= 1e3:
		return sig3(v/1e3, zeros) + "k"
	default:
		return sig3(v, zeros)
	}
}

// msLabel writes a duration in milliseconds as valueLabel does, in the
// unit that reads best: 500 µs, 2 ms, 1.5 s.
func msLabel(ms float64, zeros bool) string {
	a := math.Abs(ms)
	switch {
	case a == 0:
		return "0"
	case round3(a) < 1:
		return sig3(ms*1000, zeros) + " µs"
	case round3(a) >= 1000:
		return sig3(ms/1000, zeros) + " s"
	default:
		return sig3(ms, zeros) + " ms"
	}
}

// round3 rounds a positive v to three significant figures.
func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow10(2 - int(math.Floor(math.Log10(v))))
	return math.Round(v*p) / p
}

// sig3 writes v to three significant figures without an exponent (v is
// below 1000 in magnitude after rounding), trailing zeros kept if zeros.
func sig3(v float64, zeros bool) string {
	r := round3(math.Abs(v))
	decimals := max(0, 2-int(math.Floor(math.Log10(r))))
	t := strconv.FormatFloat(math.Copysign(r, v), 'f', decimals, 64)
	if !zeros && strings.Contains(t, ".") {
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	}
	return t
}

// niceTicks marks a linear axis at a round step, 1, 2, 2.5 or 5 times a
// power of ten, the smallest that makes at most six intervals (so four
// to seven labels: 0, 50k, 100k, … 250k), with unlabelled ticks between.
// (plot.DefaultTicks labels as few as two: 0 and 250k.)
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	mag := math.Pow10(int(math.Floor(math.Log10(span / 6))))
	step, minors := 10*mag, 5
	for _, m := range []struct {
		f      float64
		minors int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
		if span/(m.f*mag) <= 6 {
			step, minors = m.f*mag, m.minors
			break
		}
	}
	minor := step / float64(minors)
	var ticks []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9; k++ {
		v := k * minor
		if v == 0 {
			v = 0 // not -0
		}
		t := plot.Tick{Value: v}
		if int64(math.Round(k))%int64(minors) == 0 {
			t.Label = strconv.FormatFloat(v, 'g', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// logTicks marks a log axis at 1–9 times each power of ten and labels
// 1, 2 and 5 times it, so that an axis spanning less than a decade still
// has labels. (plot.LogTicks labels powers of ten only, and none below 1
// when the axis starts between 0.1 and 1.)
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	last := int(math.Floor(math.Log10(hi)))
	for e := int(math.Floor(math.Log10(lo))); e <= last+1; e++ {
		for k := 1; k <= 9 && (e <= last || k == 1); k++ {
			// Divide by an exact power of ten: the nearest float to k·10^e.
			v := float64(k) * math.Pow10(e)
			if e < 0 {
				v = float64(k) / math.Pow10(-e)
			}
			t := plot.Tick{Value: v}
			if k == 1 || k == 2 || k == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.Padding = vg.Points(4)
	return l
}

// figFile is where a figure is saved, and the note printed in its
// bottom right-hand corner: the commit and date it was measured at.
type figFile struct {
	path string
	note string
}

// save draws the plots ps side by side with the legend to their right,
// outside them, so that it never covers data, and f's note below all,
// and writes a PNG of w×h at f's path.
func save(ps []*plot.Plot, legend plot.Legend, w, h vg.Length, f figFile) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	plotArea, legendArea, noteAt := layout(dc, legend, f.note != "")
	pw := (plotArea.Max.X - plotArea.Min.X) / vg.Length(len(ps))
	for i, p := range ps {
		p.Title.Text = wrapTitle(p.Title.TextStyle, p.Title.Text, pw)
		p.Draw(draw.Crop(plotArea, pw*vg.Length(i), -pw*vg.Length(len(ps)-1-i), 0, 0))
	}
	if legendArea != nil {
		legend.Draw(*legendArea)
	}
	if f.note != "" {
		sty := ps[0].X.Tick.Label
		sty.Color = color.Gray{Y: 96}
		sty.XAlign, sty.YAlign = draw.XRight, draw.YBottom
		dc.FillText(sty, noteAt, f.note)
	}
	out, err := os.Create(f.path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// wrapTitle breaks a title wider than width into two lines at the space
// nearest its middle, so that a long title is not cut at the figure's
// edges.
func wrapTitle(sty text.Style, title string, width vg.Length) string {
	if strings.Contains(title, "\n") || sty.Width(title) <= width {
		return title
	}
	best := -1
	for i, r := range title {
		if r == ' ' && (best < 0 || abs(i-len(title)/2) < abs(best-len(title)/2)) {
			best = i
		}
	}
	if best < 0 {
		return title
	}
	return title[:best] + "\n" + title[best+1:]
}

func abs(i int) int { return max(i, -i) }

// noteHeight is the strip kept below the plot for a figure's note.
var noteHeight = vg.Points(14)

// layout splits a figure's canvas dc into the plot's area and, if the
// legend has entries, the legend's, a column to the right of the plot's
// that does not overlap it; with a note, it keeps a strip below both and
// returns the bottom right-hand point of the note's text.
func layout(dc draw.Canvas, legend plot.Legend, note bool) (plotArea draw.Canvas, legendArea *draw.Canvas, noteAt vg.Point) {
	gap := vg.Points(8)
	lw := vg.Length(0)
	if r := legend.Rectangle(dc); r.Max.X > r.Min.X {
		lw = r.Max.X - r.Min.X + 2*gap
	}
	bottom := vg.Length(0)
	if note {
		bottom = noteHeight
	}
	// A margin left and top: gonum measures nominal tick labels and the
	// title a little short, and would clip their first pixels.
	plotArea = draw.Crop(dc, vg.Points(8), -lw, bottom, -vg.Points(4))
	if lw > 0 {
		// Below the title, beside the top of the plot.
		l := draw.Crop(dc, dc.Max.X-dc.Min.X-lw+gap, 0, bottom, -vg.Points(28))
		legendArea = &l
	}
	return plotArea, legendArea, vg.Point{X: dc.Max.X - gap, Y: dc.Min.Y + vg.Points(2)}
}

// ideal is the y = x line of an achieved-vs-attempted figure.
func ideal(xmax float64) plot.Plotter {
	l, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: xmax, Y: xmax}})
	l.Color = color.Gray{Y: 160}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	return l
}

// palette holds ten distinguishable colours (Tableau 10), one per server.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }
