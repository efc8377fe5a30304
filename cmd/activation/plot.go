package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/activation-scheduler/terraform-provider-activation/sim"
)

// minPlotRate is where a violation rate of 0 is drawn on the log axis.
const minPlotRate = 1e-5

// traceSamples is how many samples of the time series the plot shows.
const traceSamples = 1440

// maxPlotDensity is the top of the density axis: settings far above the
// oracle violate most of the time and would squash the interesting part.
const maxPlotDensity = 1.2

// palette gives each policy its own colour (plotutil's cycles after 7).
var palette = []color.Color{
	color.RGBA{R: 230, G: 25, B: 75, A: 255},  // request-sum: red
	color.RGBA{R: 60, G: 180, B: 75, A: 255},  // p95-window: green
	color.RGBA{R: 0, G: 130, B: 200, A: 255},  // max-window: blue
	color.RGBA{R: 245, G: 130, B: 48, A: 255}, // n-sigma: orange
	color.RGBA{R: 145, G: 30, B: 180, A: 255}, // usage-threshold: purple
	color.RGBA{R: 0, G: 0, B: 0, A: 255},      // oracle: black
	color.RGBA{R: 240, G: 50, B: 230, A: 255}, // activation: magenta
	color.RGBA{R: 128, G: 128, B: 0, A: 255},  // linear: olive
	color.RGBA{R: 70, G: 240, B: 240, A: 255}, // others: cyan
	color.RGBA{R: 170, G: 110, B: 40, A: 255}, // brown
}

func policyColor(i int) color.Color { return palette[i%len(palette)] }

// writePlot draws the density/violation curves of every policy and a
// two-host time series of the activation policy at its best setting within
// budget (or its safest setting when none is within budget) on the first
// replayed series.
func writePlot(path string, rep *sim.Report, act sim.Policy, budget float64) error {
	curves, err := curvePlot(rep, budget)
	if err != nil {
		return err
	}
	usage, counts, err := tracePlots(rep, act, budget)
	if err != nil {
		return err
	}
	const w, h = 9 * vg.Inch, 12 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	top := draw.Crop(dc, 0, 0, h*0.45, 0) // upper 55%
	bottom := draw.Crop(dc, 0, 0, 0, -h*0.55)
	curves.Draw(top)
	rows := plot.Align([][]*plot.Plot{{usage}, {counts}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2}, bottom)
	usage.Draw(rows[0][0])
	counts.Draw(rows[1][0])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func curvePlot(rep *sim.Report, budget float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Density against violation rate (%s scenario, %d series)", rep.Scenario.Name, len(rep.Series))
	p.X.Label.Text = fmt.Sprintf("violation rate (share of host-samples over capacity; 0 drawn at %g)", minPlotRate)
	p.Y.Label.Text = "density (mean replicas per host / oracle's)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = minPlotRate, 1
	p.Y.Min, p.Y.Max = 0, maxPlotDensity
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, c := range rep.Curves {
		pts := make(plotter.XYs, 0, len(c.Points))
		for _, pt := range c.Points {
			if pt.Density > maxPlotDensity {
				continue
			}
			pts = append(pts, plotter.XY{X: math.Max(pt.ViolationRate, minPlotRate), Y: pt.Density})
		}
		if len(pts) == 0 {
			continue
		}
		col := policyColor(i)
		if len(pts) == 1 {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.Color, s.Shape, s.Radius = col, plotutil.Shape(i), vg.Points(4)
			p.Add(s)
			p.Legend.Add(c.Policy, s)
			continue
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color, s.Shape, s.Radius = col, col, plotutil.Shape(i), vg.Points(1.5)
		if sim.IsBaseline(c.Policy) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		} else {
			l.Width = vg.Points(2)
		}
		p.Add(l, s)
		p.Legend.Add(c.Policy, l, s)
	}
	bl, err := plotter.NewLine(plotter.XYs{{X: budget, Y: 0}, {X: budget, Y: maxPlotDensity}})
	if err != nil {
		return nil, err
	}
	bl.Color = color.Gray{Y: 80}
	bl.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
	p.Add(bl)
	p.Legend.Add(fmt.Sprintf("budget %g", budget), bl)
	return p, nil
}

var hostColors = []color.Color{color.RGBA{R: 230, G: 25, B: 75, A: 255}, color.RGBA{R: 0, G: 130, B: 200, A: 255}}

func tracePlots(rep *sim.Report, act sim.Policy, budget float64) (*plot.Plot, *plot.Plot, error) {
	c := rep.Curve(act.Name())
	rs := rep.Replays()
	if c == nil || len(rs) == 0 {
		return nil, nil, fmt.Errorf("no %s curve to draw", act.Name())
	}
	pt, _, ok := c.Best(budget)
	setting := "best within budget"
	if !ok {
		// The safest setting: the lowest violation rate.
		pt = c.Points[0]
		for _, q := range c.Points[1:] {
			if q.ViolationRate < pt.ViolationRate {
				pt = q
			}
		}
		setting = "none within budget: safest"
	}
	r := rs[0]
	times, hosts, err := sim.Trace(r, act, pt.Knob)
	if err != nil {
		return nil, nil, err
	}
	n := min(traceSamples, len(times))
	hours := func(i int) float64 { return float64(times[i]-times[0]) / 3600 }
	title := fmt.Sprintf("%s on %s, %s %g (%s), first %d samples", act.Name(), r.Name, c.KnobName, pt.Knob, setting, n)

	up := plot.New()
	up.Title.Text = "Host usage: " + title
	up.Y.Label.Text = "usage / capacity"
	up.Add(plotter.NewGrid())
	cp := plot.New()
	cp.Title.Text = "Replica counts"
	cp.X.Label.Text = "hours"
	cp.Y.Label.Text = "replicas"
	cp.Add(plotter.NewGrid())
	names := []string{"first host (admission, A_in)", "second host (capacity, A_out)"}
	for h := 0; h < min(2, len(hosts)); h++ {
		u := make(plotter.XYs, n)
		k := make(plotter.XYs, n)
		for i := 0; i < n; i++ {
			u[i] = plotter.XY{X: hours(i), Y: hosts[h].Usage[i]}
			k[i] = plotter.XY{X: hours(i), Y: float64(hosts[h].Counts[i])}
		}
		lu, err := plotter.NewLine(u)
		if err != nil {
			return nil, nil, err
		}
		lk, err := plotter.NewLine(k)
		if err != nil {
			return nil, nil, err
		}
		lu.Color, lk.Color = hostColors[h], hostColors[h]
		up.Add(lu)
		up.Legend.Add(names[h], lu)
		cp.Add(lk)
		cp.Legend.Add(names[h], lk)
	}
	o := make(plotter.XYs, n)
	for i := 0; i < n; i++ {
		o[i] = plotter.XY{X: hours(i), Y: float64(r.Oracle(0, i/rep.Scenario.Interval))}
	}
	lo, err := plotter.NewLine(o)
	if err != nil {
		return nil, nil, err
	}
	lo.Color = color.Gray{Y: 120}
	lo.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
	cp.Add(lo)
	cp.Legend.Add("oracle (first host)", lo)
	capLine, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: hours(n - 1), Y: 1}})
	if err != nil {
		return nil, nil, err
	}
	capLine.Color = color.RGBA{R: 200, A: 255}
	capLine.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	up.Add(capLine)
	up.Legend.Add("capacity", capLine)
	// Head room above the data for the legends.
	up.Y.Min, up.Y.Max = 0, 1.45
	maxCount := 1.0
	for _, xy := range o {
		maxCount = math.Max(maxCount, xy.Y)
	}
	cp.Y.Min, cp.Y.Max = 0, 1.45*maxCount
	up.Legend.Top, cp.Legend.Top = true, true
	up.Legend.Left, cp.Legend.Left = true, true
	return up, cp, nil
}
