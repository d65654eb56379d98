package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one server's line: medians with min/max error bars.
type series struct {
	name string
	idx  int // colour and glyph, the same for a server in every figure
	x    []float64
	y    []Stat
}

// lineFigure plots series against X, optionally on log axes, and saves
// it as PNG at path.
func lineFigure(path, title, xLabel, yLabel string, logX, logY, legendLeft bool, ss []series, extra ...plot.Plotter) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
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
		p.Legend.Add(s.name, line, points)
	}
	p.Legend.Top = true
	p.Legend.Left = legendLeft
	p.Legend.Padding = vg.Points(4)
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// barFigure draws horizontal bars (one group per entry of groups, each
// with its own legend name) and saves them as PNG at path.
func barFigure(path, title, xLabel string, labels []string, groups []string, values [][]Stat) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	n := len(groups)
	w := vg.Points(14)
	for g, name := range groups {
		vals := make(plotter.Values, len(labels))
		for i := range labels {
			vals[i] = values[g][i].Med
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Horizontal = true
		b.Color = colorOf(g)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(g)-float64(n-1)/2)
		p.Add(b)
		if n > 1 {
			p.Legend.Add(name, b)
		}
		// Value labels at the bar ends.
		var xys plotter.XYs
		var texts []string
		for i := range labels {
			xys = append(xys, plotter.XY{X: vals[i], Y: float64(i)})
			texts = append(texts, " "+short(vals[i]))
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].YAlign = draw.YCenter
			lab.TextStyle[i].Font.Size = vg.Points(9)
		}
		lab.Offset = vg.Point{Y: b.Offset}
		p.Add(lab)
	}
	p.NominalY(labels...)
	p.Legend.Top = true
	maxV := 0.0
	for _, vs := range values {
		for _, v := range vs {
			maxV = max(maxV, v.Med)
		}
	}
	p.X.Max = maxV * 1.2
	h := vg.Points(float64(len(labels)*(14*n+12)) + 90)
	return p.Save(8*vg.Inch, max(h, 3*vg.Inch), path)
}

// short formats v compactly: 12.3k, 456, 7.89.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
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

func figPath(dir, name string) string { return filepath.Join(dir, name) }
