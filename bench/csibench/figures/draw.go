package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"blockpool.dev/bench/csibench/results"
)

// figure is one image: its file, whether a run holds what it shows, and its panels, side by side.
type figure struct {
	file   string
	has    func(results.Run) bool
	panels func(results.Run) ([]*plot.Plot, error)
}

// figures are the images the docs show beside the tables of the same sections.
var figures = []figure{
	{"bench-node-calls.svg", func(r results.Run) bool { return len(r.NodeCalls) > 0 }, nodeCallsPanels},
	{"bench-snapshot-sizes.svg", func(r results.Run) bool { return len(r.Snapshots) > 0 }, snapshotPanels},
	{"bench-fio.svg", func(r results.Run) bool { return len(r.Fio) > 0 }, fioPanels},
	{"bench-idle-memory.svg", func(r results.Run) bool { return len(r.IdleMemory) > 0 }, idleMemoryPanels},
}

const (
	width       = 9 * vg.Inch
	panelHeight = 4.5 * vg.Inch
	margin      = vg.Inch / 8
)

// One colour per process or place, the same in every figure.
var (
	blockpoolColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	referenceColor = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	floorColor     = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	thirdColor     = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

func init() {
	// Sans reads better than the default serif at the size the docs show the images.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// drawAll writes the image of every figure the run holds data for into dir, and returns their
// file names; a run that holds none is an error.
func drawAll(run results.Run, dir string) ([]string, error) {
	var written []string
	for _, f := range figures {
		if !f.has(run) {
			continue
		}
		panels, err := f.panels(run)
		if err != nil {
			return written, fmt.Errorf("%s: %w", f.file, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.file), render(panels, run.About), 0o644); err != nil {
			return written, err
		}
		written = append(written, f.file)
	}
	if len(written) == 0 {
		return nil, errors.New("the run holds none of the sections with a figure (hostpath, snapshot, fio, scopes)")
	}
	return written, nil
}

// render draws the panels side by side above the run's caption, on a white ground, with their
// legends in a column of their own on the right, where they hide no data.
func render(panels []*plot.Plot, about results.About) []byte {
	style := captionStyle()
	lines := caption(about, style, width-2*margin)
	lineHeight := style.Height("M") * 1.3
	captionHeight := lineHeight*vg.Length(len(lines)) + margin
	c := vgsvg.New(width, panelHeight+captionHeight)
	dc := draw.New(c)
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})

	var legends []plot.Legend
	var legendWidth vg.Length
	for _, p := range panels {
		p.Legend.TextStyle.Font.Size = vg.Points(10)
		if r := p.Legend.Rectangle(dc); r.Size().X > 0 {
			legends = append(legends, p.Legend)
			legendWidth = max(legendWidth, r.Size().X)
		}
		p.Legend = plot.NewLegend()
	}
	if legendWidth > 0 {
		legendWidth += margin
	}
	area := draw.Crop(dc, 0, -legendWidth, captionHeight, 0)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Inch / 4, PadTop: margin, PadLeft: margin, PadRight: margin}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, area)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	column := draw.Crop(dc, dc.Size().X-legendWidth, -margin, captionHeight, -vg.Inch/2)
	for _, l := range legends {
		l.Top, l.Left, l.Padding = true, true, vg.Points(3)
		l.Draw(column)
		column.Max.Y -= l.Rectangle(column).Size().Y + margin
	}

	for i, line := range lines {
		dc.FillText(style, vg.Point{X: margin, Y: captionHeight - lineHeight*vg.Length(i+1)}, line)
	}
	var svg bytes.Buffer
	if _, err := c.WriteTo(&svg); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	// Liberation Sans has Arial's metrics: where a viewer lacks it, Arial or Helvetica take its
	// place without overrunning the room the text was measured for.
	return bytes.ReplaceAll(svg.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

func captionStyle() draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 9), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YBottom}
}

// caption is the run's description, wrapped to the width: where, when and how it was made.
func caption(about results.About, style draw.TextStyle, width vg.Length) []string {
	paragraphs := []string{fmt.Sprintf("Run of %s, driver %s, on %s.", about.Date, about.Commit, about.Machine)}
	during := fmt.Sprintf("During the run: load average (1 min) %.2f when it began, %.2f when it ended", about.LoadBefore, about.LoadAfter)
	if about.Note != "" {
		during += "; " + about.Note
	}
	paragraphs = append(paragraphs, during+".")
	paragraphs = append(paragraphs, "Command: "+about.Command)
	var lines []string
	for _, p := range paragraphs {
		lines = append(lines, wrap(p, style, width)...)
	}
	return lines
}

// wrap breaks text into lines no wider than width, at spaces; a word wider than that stays whole.
func wrap(text string, style draw.TextStyle, width vg.Length) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && style.Width(line+" "+word) > width {
			lines = append(lines, line)
			line = "    " + word // continuation lines indented, so each paragraph's start shows
			continue
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	return append(lines, line)
}

// nodeCallsPanels: each node call's p50, p90 and p99 per process on a log scale, the calls top
// to bottom in the order a pod's volume meets them.
func nodeCallsPanels(run results.Run) ([]*plot.Plot, error) {
	var processes, operations []string
	for _, l := range run.NodeCalls {
		if !slices.Contains(processes, l.Process) {
			processes = append(processes, l.Process)
		}
		if !slices.Contains(operations, l.Operation) {
			operations = append(operations, l.Operation)
		}
	}
	p := plot.New()
	p.Title.Text = "Node calls: p50, p90 and p99 of each process"
	p.X.Label.Text = "latency, ms (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	row := func(operation string) float64 {
		return float64(len(operations) - 1 - slices.Index(operations, operation))
	}
	labels := slices.Clone(operations)
	slices.Reverse(labels)
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(operations))-0.4

	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	quantiles := []string{"p50", "p90", "p99"}
	for i, process := range processes {
		clr := processColor(process, i)
		// The first process above its call's line, the next below it.
		offset := 0.3 * (float64(len(processes)-1)/2 - float64(i)) / math.Max(float64(len(processes)-1), 1)
		var points [3]plotter.XYs
		for _, l := range run.NodeCalls {
			if l.Process != process {
				continue
			}
			if l.P50 <= 0 || l.P99 <= 0 {
				return nil, fmt.Errorf("%s %s: a latency of 0 cannot be drawn on a log scale", process, l.Operation)
			}
			y := row(l.Operation) + offset
			for q, v := range []float64{l.P50, l.P90, l.P99} {
				points[q] = append(points[q], plotter.XY{X: v, Y: y})
			}
			spread, err := plotter.NewLine(plotter.XYs{{X: l.P50, Y: y}, {X: l.P99, Y: y}})
			if err != nil {
				return nil, err
			}
			spread.Color = clr
			p.Add(spread)
		}
		for q := range quantiles {
			s, err := plotter.NewScatter(points[q])
			if err != nil {
				return nil, err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: clr, Radius: vg.Points(3.5), Shape: glyphs[q]}
			p.Add(s)
			if q == 0 {
				p.Legend.Add(process, s)
			}
		}
	}
	for q, name := range quantiles {
		p.Legend.Add(name, legendGlyph{glyphs[q]})
	}
	// Room on the log scale beyond the extremes, so that no glyph sits on the frame.
	p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5
	p.Legend.Top = true
	return []*plot.Plot{p}, nil
}

// legendGlyph is a legend's thumbnail of a glyph in neutral grey: which quantile a shape is.
type legendGlyph struct{ shape draw.GlyphDrawer }

func (g legendGlyph) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: g.shape}, c.Center())
}

func processColor(process string, i int) color.Color {
	switch {
	case process == "blockpool" || strings.Contains(process, "pool,"):
		return blockpoolColor
	case process == "gomock":
		return floorColor
	case i == 1 || strings.Contains(process, "host-path"):
		return referenceColor
	}
	return thirdColor
}

// snapshotPanels: CreateSnapshot's p50 and p90 and FICLONE's p50 against the volume's size.
func snapshotPanels(run results.Run) ([]*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "CreateSnapshot on an XFS reflink pool, by the volume's size"
	first := run.Snapshots[0]
	p.X.Label.Text = fmt.Sprintf("volume size (log scale); each holds 1 MiB of data in every %d MiB",
		int64(first.SizeGiB)*1024/int64(max(first.DataMiB, 1)))
	p.Y.Label.Text = "ms"
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	var create50, create90, clone plotter.XYs
	for _, s := range run.Snapshots {
		x := float64(s.SizeGiB)
		ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%d GiB", s.SizeGiB)})
		create50 = append(create50, plotter.XY{X: x, Y: s.P50})
		create90 = append(create90, plotter.XY{X: x, Y: s.P90})
		clone = append(clone, plotter.XY{X: x, Y: s.FicloneP50})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	for _, series := range []struct {
		name   string
		points plotter.XYs
		color  color.Color
		dashed bool
	}{
		{"CreateSnapshot p50", create50, blockpoolColor, false},
		{"CreateSnapshot p90", create90, blockpoolColor, true},
		{"FICLONE of the image, p50", clone, floorColor, false},
	} {
		line, points, err := plotter.NewLinePoints(series.points)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = series.color, series.color
		points.Shape = draw.CircleGlyph{}
		if series.dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line, points)
		p.Legend.Add(series.name, line, points)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return []*plot.Plot{p}, nil
}

// fioPanels: each fio job's throughput in the volume, on the pool's filesystem and on a bare loop
// device; sequential jobs by MiB/s and random ones by IOPS, side by side.
func fioPanels(run results.Run) ([]*plot.Plot, error) {
	places := []struct {
		name  string
		color color.Color
		of    func(results.FioJob) results.Throughput
	}{
		{"in the volume", blockpoolColor, func(j results.FioJob) results.Throughput { return j.Volume }},
		{"on the pool's filesystem", floorColor, func(j results.FioJob) results.Throughput { return j.PoolFS }},
		{"bare loop device, no driver", thirdColor, func(j results.FioJob) results.Throughput { return j.BareLoop }},
	}
	var panels []*plot.Plot
	for _, random := range []bool{false, true} {
		var jobs []results.FioJob
		for _, j := range run.Fio {
			if j.Random == random {
				jobs = append(jobs, j)
			}
		}
		if len(jobs) == 0 {
			continue
		}
		p := plot.New()
		value := func(t results.Throughput) float64 { return t.MiBps }
		p.Title.Text, p.Y.Label.Text = "fio, sequential 1 MiB", "MiB/s"
		if random {
			value = func(t results.Throughput) float64 { return t.IOPS / 1000 }
			p.Title.Text, p.Y.Label.Text = "fio, random 4 KiB, queue depth 16", "thousand IOPS"
		}
		var names []string
		for _, j := range jobs {
			// the panel's title names the rest of the job
			names = append(names, map[bool]string{true: "write", false: "read"}[strings.Contains(j.Job, "write")])
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(jobs))-0.5
		p.Y.Tick.Marker = plainTicks{}
		p.Add(horizontalGrid())
		highest := 0.0
		for i, place := range places {
			b := &groupedBars{color: place.color, width: 0.8 / float64(len(places))}
			for x, j := range jobs {
				// the places side by side around the job's tick
				b.bars = append(b.bars, plotter.XY{X: float64(x) + b.width*(float64(i)-float64(len(places)-1)/2), Y: value(place.of(j))})
				highest = max(highest, value(place.of(j)))
			}
			p.Add(b)
			if !random {
				p.Legend.Add(place.name, b)
			}
		}
		p.Y.Min, p.Y.Max = 0, highest*1.1 // room above the highest bar
		panels = append(panels, p)
	}
	return panels, nil
}

// groupedBars are vertical bars of one colour, each centred on its X and as wide as width, both
// in the data's units, so that groups of bars fit their category at any size of the image.
type groupedBars struct {
	bars  plotter.XYs
	width float64
	color color.Color
}

func (b *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for _, bar := range b.bars {
		left, right := x(bar.X-b.width/2), x(bar.X+b.width/2)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{
			{X: left, Y: y(0)}, {X: right, Y: y(0)}, {X: right, Y: y(bar.Y)}, {X: left, Y: y(bar.Y)}}))
	}
}

func (b *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, _, ymax = plotter.XYRange(b.bars)
	return xmin - b.width/2, xmax + b.width/2, 0, ymax
}

func (b *groupedBars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// plainTicks are the default ticks labelled with no more digits than their value has.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}

// horizontalGrid is a grid of the values only, for bars over named categories.
func horizontalGrid() *plotter.Grid {
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	return grid
}

// idleMemoryPanels: each process's idle RSS, the median of the rounds as a bar and their range
// as a line across its end.
func idleMemoryPanels(run results.Run) ([]*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Idle memory by pool scope"
	rounds := len(run.IdleMemory[0].MiB)
	p.X.Label.Text = fmt.Sprintf("RSS, MiB: the median of %d rounds; the line, their range", rounds)
	p.X.Min = 0
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil // the processes' rows need no lines across
	p.Add(grid)
	n := len(run.IdleMemory)
	var names []string
	var labels plotter.XYLabels
	for i, m := range run.IdleMemory {
		if len(m.MiB) == 0 {
			return nil, fmt.Errorf("%s: no round recorded", m.Process)
		}
		y := float64(n - 1 - i) // the first process at the top
		sorted := slices.Sorted(slices.Values(m.MiB))
		median := sorted[(len(sorted)-1)/2]
		bars, err := plotter.NewBarChart(plotter.Values{median}, vg.Inch/3)
		if err != nil {
			return nil, err
		}
		bars.Horizontal, bars.XMin = true, y
		bars.Color = processColor(m.Process, i)
		bars.LineStyle.Width = 0
		spread, err := plotter.NewLine(plotter.XYs{{X: sorted[0], Y: y}, {X: sorted[len(sorted)-1], Y: y}})
		if err != nil {
			return nil, err
		}
		spread.Width = vg.Points(2)
		p.Add(bars, spread)
		labels.XYs = append(labels.XYs, plotter.XY{X: sorted[len(sorted)-1], Y: y})
		labels.Labels = append(labels.Labels, fmt.Sprintf("%.1f MiB", median))
		name := m.Process
		if m.Detail != "" {
			name += "\n" + m.Detail
		}
		names = append(names, name)
	}
	slices.Reverse(names)
	p.NominalY(names...)
	values, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	values.Offset = vg.Point{X: vg.Points(6), Y: -vg.Points(4)}
	p.Add(values)
	return []*plot.Plot{p}, nil
}
