package main

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
)

// minPlotRate is where a violation rate of 0 is drawn on the log axis.
const minPlotRate = 1e-5

// traceSamples is how many samples of the time series the plot shows.
const traceSamples = 1440

// maxPlotDensity is the top of the density axis: settings far above the
// oracle violate most of the time and would squash the interesting part.
const maxPlotDensity = 1.2

// policyStyle is how one policy is drawn: its colour, marker and line.
type policyStyle struct {
	color  color.Color
	shape  draw.GlyphDrawer
	dashes []vg.Length
	width  vg.Length
}

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }

var (
	solid  []vg.Length
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	dashDo = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	longDs = []vg.Length{vg.Points(10), vg.Points(3)}
)

// styles gives every known policy its own colour, marker and line style,
// so that curves that meet (request-sum and the linear ablation sit close
// together) stay apart to the eye.
var styles = map[string]policyStyle{
	sim.PolicyRequestSum:      {rgb(230, 25, 75), draw.BoxGlyph{}, dashed, vg.Points(1.5)},
	sim.PolicyP95Window:       {rgb(60, 160, 60), draw.TriangleGlyph{}, dotted, vg.Points(1.5)},
	sim.PolicyMaxWindow:       {rgb(0, 110, 200), draw.PyramidGlyph{}, dashDo, vg.Points(1.5)},
	sim.PolicyNSigma:          {rgb(245, 130, 48), draw.CrossGlyph{}, longDs, vg.Points(1.5)},
	sim.PolicyUsageThreshold:  {rgb(145, 30, 180), draw.PlusGlyph{}, dashed, vg.Points(1.5)},
	sim.PolicyOracle:          {rgb(0, 0, 0), draw.CircleGlyph{}, solid, vg.Points(1)},
	sim.PolicyAdmissionOracle: {rgb(128, 128, 128), draw.CircleGlyph{}, solid, vg.Points(1)},
	sim.PolicyActivation:      {rgb(220, 0, 160), draw.CircleGlyph{}, solid, vg.Points(2.5)},
	stepsPolicy:               {rgb(90, 50, 10), draw.SquareGlyph{}, []vg.Length{vg.Points(4), vg.Points(2)}, vg.Points(1.2)},
	sim.PolicyLinear:          {rgb(110, 110, 0), draw.RingGlyph{}, dotted, vg.Points(2)},
}

func styleOf(name string) policyStyle {
	if s, ok := styles[name]; ok {
		return s
	}
	return policyStyle{rgb(70, 200, 200), draw.RingGlyph{}, solid, vg.Points(1)}
}

// knobWords names each knob in words for the legend.
var knobWords = map[string]string{
	"k":                     "request overcommit factor k",
	"m":                     "margin m over the window statistic",
	"N":                     "N standard deviations",
	"theta":                 "host usage threshold theta",
	sim.KnobOutputThreshold: "engine output threshold",
	sim.KnobPerBranch:       "containers per activated branch",
	"scale":                 "scale of the linear prediction",
}

func knobInWords(name string) string {
	if w, ok := knobWords[name]; ok {
		return w
	}
	return name
}

// The page: the curve plot above, the two-host time series below, each
// with its legend in a column to the right of the data.
const (
	pageW       = 13 * vg.Inch
	pageH       = 14 * vg.Inch
	legendW     = 4.6 * vg.Inch
	curveShare  = 0.46 // of the height
	legendFont  = 10
	legendInset = 0.15 * vg.Inch
)

// renderPlot draws rep's density/violation curves, and the two hosts of
// traceFrom's first replay unit over time under the activation policy at
// its best setting within budget (or its safest setting when none is),
// into a temporary file beside path, synced: it returns the file's name,
// for the caller to rename over path once every plot of the run is
// written (a failed write replaces none of them).
func renderPlot(path string, rep, traceFrom *sim.Report, act sim.Policy, budget float64) (string, error) {
	curves, curveLegend, err := curvePlot(rep, budget)
	if err != nil {
		return "", err
	}
	usage, counts, traceLegend, err := tracePlots(traceFrom, rep, act, budget)
	if err != nil {
		return "", err
	}
	img := vgimg.NewWith(vgimg.UseWH(pageW, pageH), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	top := draw.Crop(dc, 0, 0, pageH*(1-curveShare), 0)
	bottom := draw.Crop(dc, 0, 0, 0, -pageH*curveShare)
	left := func(c draw.Canvas) draw.Canvas { return draw.Crop(c, 0, -legendW, 0, 0) }
	right := func(c draw.Canvas) draw.Canvas {
		return draw.Crop(c, c.Max.X-c.Min.X-legendW+legendInset, 0, 0, -legendInset)
	}
	curves.Draw(left(top))
	curveLegend.Draw(right(top))
	rows := plot.Align([][]*plot.Plot{{usage}, {counts}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 4}, left(bottom))
	usage.Draw(rows[0][0])
	counts.Draw(rows[1][0])
	traceLegend.Draw(right(bottom))
	// Into a temporary file, renamed over path by the caller: a failed or
	// killed write leaves no truncated plot.
	f, err := engine.CreateTemp(path)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// renderPlotFunc is renderPlot; a test makes it fail.
var renderPlotFunc = renderPlot

// writePlots renders every plot of a run (paths[i] is reps[i]'s; the
// pooled report's trace is the first family's) and then renames them over
// their paths, returning the paths written: a plot that cannot be rendered
// leaves every plot as it was, and none of the run's temporary files; a
// rename that fails (rarer: the path became a directory, or another
// user's file in a shared directory) leaves the plots renamed before it
// written, and says which.
func writePlots(paths []string, reps []*sim.Report, act sim.Policy, budget float64) ([]string, error) {
	tmps := make([]string, 0, len(paths))
	removeAll := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	for i, r := range reps {
		traceFrom := r
		if r.Family == sim.PooledFamily {
			traceFrom = reps[0]
		}
		tmp, err := renderPlotFunc(paths[i], r, traceFrom, act, budget)
		if err != nil {
			removeAll()
			return nil, fmt.Errorf("%s: %w (no plot was written)", paths[i], err)
		}
		tmps = append(tmps, tmp)
	}
	for i, tmp := range tmps {
		if err := os.Rename(tmp, paths[i]); err != nil {
			removeAll()
			engine.SyncDir(filepath.Dir(paths[0]))
			if i == 0 {
				return nil, fmt.Errorf("%w (no plot was written)", err)
			}
			return paths[:i], fmt.Errorf("%w (written before it: %s; the rest not)", err, strings.Join(paths[:i], ", "))
		}
	}
	engine.SyncDir(filepath.Dir(paths[0]))
	return paths, nil
}

// plotPaths is every plot --plot FILE asks for, in the order of the
// reports: FILE for one family; FILE-<family>.png for each of several, and
// FILE-pooled.png.
func plotPaths(file string, dirs []traceDir) []string {
	switch {
	case file == "":
		return nil
	case len(dirs) == 1:
		return []string{file}
	}
	stem := strings.TrimSuffix(file, filepath.Ext(file))
	var out []string
	for _, d := range dirs {
		out = append(out, stem+"-"+d.family+".png")
	}
	return append(out, stem+"-"+sim.PooledFamily+".png")
}

// plotsWritable checks, before a replay, that the plots can be written: no
// path is a directory, and their directory, or the nearest of its parents
// that exists (the rest is made only once the replay succeeded), takes a
// new file. A replay that fails only at its plots loses its results.
func plotsWritable(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return fmt.Errorf("%s is a directory", p)
		}
	}
	dir := filepath.Dir(paths[0])
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			return err
		}
		dir = filepath.Dir(dir)
	}
	f, err := os.CreateTemp(dir, ".plot-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = font.Length(legendFont)
	l.ThumbnailWidth = vg.Points(34)
	l.Padding = vg.Points(4)
	return l
}

func curvePlot(rep *sim.Report, budget float64) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	leg := newLegend()
	p.Title.Text = fmt.Sprintf("Density against violation rate: %s scenario, %s, %d series\n(each point is one knob setting; a large marker is the best setting within the %g budget)",
		rep.Scenario.Name, familyWords(rep.Family), len(rep.Series), budget)
	p.X.Label.Text = fmt.Sprintf("violation rate: share of host-samples over capacity (log scale; 0 is drawn at %g)", minPlotRate)
	p.Y.Label.Text = "density: mean replicas per host / the oracle's"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = minPlotRate, 1
	p.Y.Min, p.Y.Max = 0, maxPlotDensity
	p.Add(plotter.NewGrid())
	bl, err := plotter.NewLine(plotter.XYs{{X: budget, Y: 0}, {X: budget, Y: maxPlotDensity}})
	if err != nil {
		return nil, leg, err
	}
	bl.Color = color.Gray{Y: 90}
	bl.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	bl.Width = vg.Points(1.5)
	p.Add(bl)
	leg.Add(fmt.Sprintf("budget: %g violation rate", budget), bl)
	// Thick lines first and thin ones over them, so that curves that
	// coincide (activation with and without steps, request-sum and the
	// linear ablation) all stay visible; the oracle's one point last.
	order := make([]int, 0, len(rep.Curves))
	for i := range rep.Curves {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := rep.Curves[order[a]].Policy, rep.Curves[order[b]].Policy
		if oa, ob := isOracle(ca), isOracle(cb); oa != ob {
			return ob
		}
		return styleOf(ca).width > styleOf(cb).width
	})
	labels := make([]string, len(rep.Curves))
	thumbsOf := make([][]plot.Thumbnailer, len(rep.Curves))
	for _, i := range order {
		c := rep.Curves[i]
		st := styleOf(c.Policy)
		pts := make(plotter.XYs, 0, len(c.Points))
		for _, pt := range c.Points {
			if pt.Density > maxPlotDensity {
				continue
			}
			pts = append(pts, plotter.XY{X: math.Max(pt.ViolationRate, minPlotRate), Y: pt.Density})
		}
		best, _, ok := c.Best(budget)
		label := c.Policy
		switch {
		case c.KnobName == "" && ok:
			label += fmt.Sprintf(": density %.3f", best.Density)
		case ok:
			label += fmt.Sprintf(": %.3f at %s %.4g", best.Density, knobInWords(c.KnobName), best.Knob)
		case c.KnobName != "":
			label += fmt.Sprintf(": none within budget (knob: %s)", knobInWords(c.KnobName))
		default:
			label += ": not within budget"
		}
		var thumbs []plot.Thumbnailer
		if len(pts) > 1 {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, leg, err
			}
			l.Color, l.Dashes, l.Width = st.color, st.dashes, st.width
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, leg, err
			}
			s.Color, s.Shape, s.Radius = st.color, st.shape, vg.Points(2)
			p.Add(l, s)
			thumbs = append(thumbs, l)
		}
		if ok && best.Density <= maxPlotDensity {
			b, err := plotter.NewScatter(plotter.XYs{{X: math.Max(best.ViolationRate, minPlotRate), Y: best.Density}})
			if err != nil {
				return nil, leg, err
			}
			b.Color, b.Shape, b.Radius = st.color, st.shape, vg.Points(6)
			p.Add(b)
			thumbs = append(thumbs, b)
		}
		labels[i], thumbsOf[i] = label, thumbs
	}
	for i := range rep.Curves { // the legend in the report's order
		if len(thumbsOf[i]) > 0 {
			leg.Add(labels[i], thumbsOf[i]...)
		}
	}
	return p, leg, nil
}

func familyWords(f string) string {
	switch f {
	case "":
		return "all series"
	case sim.PooledFamily:
		return "families pooled"
	}
	return "family " + f
}

// Host styles: the first host a broad light band, the second a thin dark
// dashed line over it, so that both stay visible where they coincide.
var (
	hostColors = [2]color.Color{color.RGBA{R: 250, G: 150, B: 60, A: 255}, color.RGBA{R: 0, G: 70, B: 160, A: 255}}
	hostWidth  = [2]vg.Length{vg.Points(5), vg.Points(1.3)}
	hostDashes = [2][]vg.Length{nil, {vg.Points(5), vg.Points(2)}}
	hostNames  = [2]string{"first host (admission processor, A_in)", "second host (capacity processor, A_out)"}
	hostShort  = [2]string{"first host", "second host"}
)

func tracePlots(from, curves *sim.Report, act sim.Policy, budget float64) (*plot.Plot, *plot.Plot, plot.Legend, error) {
	leg := newLegend()
	c := curves.Curve(act.Name())
	if c == nil || len(c.Points) == 0 {
		return nil, nil, leg, fmt.Errorf("no %s curve to draw", act.Name())
	}
	pt, _, ok := c.Best(budget)
	setting := "its best setting within the budget"
	if !ok {
		// The safest setting: the lowest violation rate.
		pt = c.Points[0]
		for _, q := range c.Points[1:] {
			if q.ViolationRate < pt.ViolationRate {
				pt = q
			}
		}
		setting = "no setting within the budget: its safest"
	}
	r, err := from.Prepare(0)
	if err != nil {
		return nil, nil, leg, err
	}
	times, hosts, err := sim.Trace(r, act, pt.Knob)
	if err != nil {
		return nil, nil, leg, err
	}
	n := min(traceSamples, len(times))
	hours := func(i int) float64 { return float64(times[i]-times[0]) / 3600 }
	apps := hosts[0].App
	if len(hosts) > 1 && hosts[1].App != hosts[0].App {
		apps = "first host " + hosts[0].App + ", second host " + hosts[1].App
	}

	up := plot.New()
	up.Title.Text = fmt.Sprintf("The two hosts over time, series %s, first %d samples:\n%s at %s (%s %.4g)",
		apps, n, act.Name(), setting, knobInWords(c.KnobName), pt.Knob)
	up.Y.Label.Text = "host usage / capacity"
	up.Add(plotter.NewGrid())
	cp := plot.New()
	cp.X.Label.Text = "hours from the first decision"
	if len(hosts) > 1 && hosts[1].App != hosts[0].App {
		cp.X.Label.Text += " (of the first host's series; the two series' samples are paired in order)"
	}
	cp.Y.Label.Text = "replicas running"
	cp.Add(plotter.NewGrid())
	capLine, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: hours(n - 1), Y: 1}})
	if err != nil {
		return nil, nil, leg, err
	}
	capLine.Color = color.RGBA{R: 200, A: 255}
	capLine.Width = vg.Points(1.5)
	capLine.Dashes = []vg.Length{vg.Points(8), vg.Points(3)}
	up.Add(capLine)
	maxY, maxCount := 1.0, 1.0
	for h := 0; h < min(2, len(hosts)); h++ {
		u := make(plotter.XYs, n)
		k := make(plotter.XYs, n)
		o := make(plotter.XYs, n)
		var m plotter.XYs
		for i := 0; i < n; i++ {
			u[i] = plotter.XY{X: hours(i), Y: hosts[h].Usage[i]}
			k[i] = plotter.XY{X: hours(i), Y: float64(hosts[h].Counts[i])}
			o[i] = plotter.XY{X: hours(i), Y: float64(hosts[h].Oracle[i])}
			maxY = math.Max(maxY, hosts[h].Usage[i])
			maxCount = math.Max(maxCount, math.Max(k[i].Y, o[i].Y))
			if hosts[h].Memory != nil {
				m = append(m, plotter.XY{X: hours(i), Y: hosts[h].Memory[i]})
				maxY = math.Max(maxY, hosts[h].Memory[i])
			}
		}
		lu, err := plotter.NewLine(u)
		if err != nil {
			return nil, nil, leg, err
		}
		lk, err := plotter.NewLine(k)
		if err != nil {
			return nil, nil, leg, err
		}
		lo, err := plotter.NewLine(o)
		if err != nil {
			return nil, nil, leg, err
		}
		for _, l := range []*plotter.Line{lu, lk} {
			l.Color, l.Width, l.Dashes = hostColors[h], hostWidth[h], hostDashes[h]
			l.StepStyle = plotter.PreStep
		}
		lu.StepStyle = plotter.NoStep
		lo.Color, lo.Width = hostColors[h], vg.Points(1)
		lo.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		lo.StepStyle = plotter.PreStep
		up.Add(lu)
		cp.Add(lk, lo)
		leg.Add(hostNames[h]+": CPU usage, replicas", lk)
		leg.Add(hostShort[h]+": the oracle's replicas", lo)
		if m != nil {
			lm, err := plotter.NewLine(m)
			if err != nil {
				return nil, nil, leg, err
			}
			lm.Color, lm.Width = hostColors[h], vg.Points(1)
			lm.Dashes = []vg.Length{vg.Points(2), vg.Points(2), vg.Points(6), vg.Points(2)}
			up.Add(lm)
			leg.Add(hostShort[h]+": memory use / capacity", lm)
		}
	}
	leg.Add("host capacity (usage 1)", capLine)
	// Bursts far over capacity would squash the rest: the axis stops at
	// twice the capacity and says so.
	const maxUsageAxis = 2.0
	up.Y.Min, up.Y.Max = 0, math.Min(1.1*maxY, maxUsageAxis)
	if 1.1*maxY > maxUsageAxis {
		up.Y.Label.Text += fmt.Sprintf(" (axis cut at %g; peaks reach %.1f)", maxUsageAxis, maxY)
	}
	cp.Y.Min, cp.Y.Max = 0, 1.1*maxCount
	return up, cp, leg, nil
}

// isOracle reports whether a policy is one of the oracles (one point each,
// drawn last).
func isOracle(name string) bool {
	return name == sim.PolicyOracle || name == sim.PolicyAdmissionOracle
}
