package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// panel is one figure of the chart.
type panel struct {
	title    string
	scenario string
	unit     string                // unit as the benchmark printed it
	value    func(float64) float64 // from the unit to what is drawn
	format   string                // fmt verb for the bar labels
}

// panels are the chart's figures, drawn two per line.
var panels = []panel{
	{"lock-unlock, 1 client: µs per pair (lower is better)", "op=lock-unlock/clients=1", "ns/op", func(v float64) float64 { return v / 1e3 }, "%.0f"},
	{"lock-unlock, 64 clients: thousand pairs/s (higher is better)", "op=lock-unlock/clients=64", "ns/op", func(v float64) float64 { return 1e6 / v }, "%.1f"},
	{"lock-unlock, 1 client: allocs per pair (lower is better)", "op=lock-unlock/clients=1", "allocs/op", func(v float64) float64 { return v }, "%.0f"},
	{"contended 8×1ms: p99 wait, ms (lower is better)", "op=contended/clients=8/hold=1ms", "wait-p99-ns", func(v float64) float64 { return v / 1e6 }, "%.1f"},
	{"contended 8×1ms: handoffs/s (higher is better)", "op=contended/clients=8/hold=1ms", "handoffs/s", func(v float64) float64 { return v }, "%.0f"},
	{"contended 8×1ms: fairness, fewest÷most grants (higher is better)", "op=contended/clients=8/hold=1ms", "fairness", func(v float64) float64 { return v }, "%.2f"},
	{"read-write, 16 clients, 90% reads: µs per lock+unlock (lower is better)", "op=rw/clients=16/reads=90pct", "ns/op", func(v float64) float64 { return v / 1e3 }, "%.1f"},
	{"auto-refresh of 10,000 leases: CPU ms per second (lower is better)", "op=refresh/leases=10000", "cpu-ms/s", func(v float64) float64 { return v }, "%.0f"},
}

// libColor gives each library a colour; its variants (-tuned, -fifo rows)
// a lighter shade of it.
func libColor(row string) color.Color {
	lib, _, _ := strings.Cut(row, "/")
	base, tuned := strings.CutSuffix(lib, "-tuned")
	if b, fifo := strings.CutSuffix(base, "-fifo"); fifo {
		base, tuned = b, true
	}
	c := map[string]color.RGBA{
		"scriptlock":  {0x1f, 0x5f, 0xbf, 0xff},
		"raw":         {0x80, 0x80, 0x80, 0xff},
		"syncmutex":   {0x40, 0x40, 0x40, 0xff},
		"redsync":     {0xd9, 0x5f, 0x0e, 0xff},
		"redislock":   {0x2c, 0xa0, 0x2c, 0xff},
		"rueidislock": {0x94, 0x67, 0xbd, 0xff},
	}[base]
	if c.A == 0 {
		c = color.RGBA{0xbc, 0xbd, 0x22, 0xff}
	}
	if tuned {
		c = color.RGBA{c.R/2 + 0x7f, c.G/2 + 0x7f, c.B/2 + 0x7f, 0xff}
	}
	return c
}

// draw renders ps from t into the file out (.png or .svg), marking the
// rows that failed (fails).
func draw(t *table, ps []panel, fails failures, title, out string) error {
	const cols = 2
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range ps {
		pl, err := plotPanel(t, p, fails)
		if err != nil {
			return err
		}
		grid[i/cols][i%cols] = pl
	}

	w, h := 15*vg.Inch, vg.Length(rows)*4*vg.Inch+0.6*vg.Inch
	var c vg.CanvasWriterTo
	switch ext := strings.ToLower(filepath.Ext(out)); ext {
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
	case ".svg":
		c = vgsvg.New(w, h)
	default:
		return fmt.Errorf("%s: unknown output format %q (want .png or .svg)", out, ext)
	}
	dc := vgdraw.New(c)
	if _, ok := c.(*vgsvg.Canvas); ok {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
	}
	sty := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 16), Handler: plot.DefaultTextHandler, XAlign: vgdraw.XCenter, YAlign: vgdraw.YTop}
	dc.FillText(sty, vg.Point{X: w / 2, Y: h - 0.15*vg.Inch}, title)
	body := vgdraw.Crop(dc, 0, 0, 0, -0.6*vg.Inch)
	tiles := vgdraw.Tiles{Rows: rows, Cols: cols, PadX: 0.3 * vg.Inch, PadY: 0.3 * vg.Inch, PadLeft: 0.1 * vg.Inch, PadRight: 0.3 * vg.Inch, PadBottom: 0.1 * vg.Inch}
	canvases := plot.Align(grid, tiles, body)
	for i := range grid {
		for j, pl := range grid[i] {
			if pl != nil {
				pl.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", out, err)
	}
	return f.Close()
}

// plotPanel makes one horizontal bar plot: a bar per row that has the
// figure, the first row at the top, each bar drawn to its median over the
// passes with a whisker from the first to the third quartile, and
// labelled "median [q1–q3]".
//
// A row that failed in some passes (fails) says so in its label; one that
// failed in every pass has no bar and the label "failed in every pass".
func plotPanel(t *table, p panel, fails failures) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.title
	pl.Title.TextStyle.Font.Size = 12
	pl.X.Min = 0
	var names []string
	var vals []spread
	var rows []string
	var notes []string
	for _, row := range t.rows {
		failed := fails[row][p.scenario]
		if v, ok := t.spread(row, p.scenario, p.unit, p.value); ok {
			rows = append(rows, row)
			vals = append(vals, v)
			note := ""
			if failed > 0 {
				note = fmt.Sprintf(" (failed in %d passes)", failed)
			}
			notes = append(notes, note)
		} else if failed > 0 {
			rows = append(rows, row)
			vals = append(vals, spread{})
			notes = append(notes, " failed in every pass")
		}
	}
	if len(rows) == 0 {
		pl.X.Label.Text = "no data"
		return pl, nil
	}
	maxV := 0.0
	labels := plotter.XYLabels{}
	var whiskers xWhiskers
	for i := range rows {
		// Index 0 is drawn at the bottom: put the first row on top.
		k := len(rows) - 1 - i
		names = append(names, rows[k])
		v := vals[k]
		maxV = max(maxV, v.q3)
		bar, err := plotter.NewBarChart(plotter.Values{v.median}, 0.6*vg.Centimeter)
		if err != nil {
			return nil, err
		}
		bar.Horizontal = true
		bar.XMin = float64(i)
		bar.Color = libColor(rows[k])
		bar.LineStyle.Width = 0
		pl.Add(bar)
		label := " " + notes[k]
		if v.n > 0 {
			whiskers.XYs = append(whiskers.XYs, plotter.XY{X: v.median, Y: float64(i)})
			whiskers.XErrors = append(whiskers.XErrors, struct{ Low, High float64 }{v.median - v.q1, v.q3 - v.median})
			label = " " + fmt.Sprintf(p.format, v.median) + " [" + fmt.Sprintf(p.format, v.q1) + "–" + fmt.Sprintf(p.format, v.q3) + "]" + notes[k]
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: v.q3, Y: float64(i)})
		labels.Labels = append(labels.Labels, label)
	}
	if len(whiskers.XYs) > 0 {
		eb, err := plotter.NewXErrorBars(whiskers)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Width = vg.Points(1.2)
		eb.CapWidth = 0.3 * vg.Centimeter
		pl.Add(eb)
	}
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].YAlign = vgdraw.YCenter
		lb.TextStyle[i].Font.Size = 9
	}
	pl.Add(lb)
	pl.NominalY(names...)
	pl.X.Max = maxV * 1.35
	if maxV == 0 {
		pl.X.Max = 1
	}
	pl.Add(plotter.NewGrid())
	return pl, nil
}

// xWhiskers are the quartile whiskers of a panel's bars: a point per bar
// (its median) with the distances down to q1 and up to q3.
type xWhiskers struct {
	plotter.XYs
	plotter.XErrors
}
