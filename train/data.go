package train

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	ustats "github.com/activation-scheduler/terraform-provider-activation/stats"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Family is one source of usage series (a provider's workloads). IDs, when
// given, are the series' identities (the VM a series of one day belongs
// to); the split keeps every series of one identity on one side. Nil IDs
// use the series names.
type Family struct {
	Name   string
	Series []traces.Series
	IDs    []string
}

func (f *Family) id(i int) string {
	if f.IDs != nil {
		return f.IDs[i]
	}
	return f.Series[i].Name
}

// split returns the indices of the training, validation and held-out
// series: by identity (traces.SplitByName on the identities), so no
// identity is on two sides. The held-out side is split over every
// identity, as a replay splits the same series; the validation side over
// the identities of the rest with a series usable[i], and only usable
// series are returned on any side.
func (f *Family) split(s Settings, usable []bool) (trainIdx, valIdx, testIdx []int) {
	var ids, kept []traces.Series
	seen := map[string]bool{}
	hasUsable := map[string]bool{}
	for i := range f.Series {
		id := f.id(i)
		if !seen[id] {
			seen[id] = true
			ids = append(ids, traces.Series{Name: id})
		}
		hasUsable[id] = hasUsable[id] || usable[i]
	}
	side := map[string]int{}
	rest := ids
	if s.HeldOutShare > 0 {
		var test []traces.Series
		rest, test = traces.SplitByName(ids, s.HeldOutShare, s.SplitSeed)
		for _, t := range test {
			side[t.Name] = 2
		}
	}
	for _, r := range rest {
		if hasUsable[r.Name] {
			kept = append(kept, r)
		}
	}
	if len(kept) >= 2 {
		_, val := traces.SplitByName(kept, s.ValShare, s.SplitSeed+1)
		for _, t := range val {
			side[t.Name] = 1
		}
	}
	for i := range f.Series {
		if !usable[i] {
			continue
		}
		switch side[f.id(i)] {
		case 2:
			testIdx = append(testIdx, i)
		case 1:
			valIdx = append(valIdx, i)
		default:
			trainIdx = append(trainIdx, i)
		}
	}
	return trainIdx, valIdx, testIdx
}

// dataset holds examples. use are the statistics (rows x width, per-replica
// shares of the host); peaks[r*slots+m-1] is the host's usage share over
// the horizon with m replicas; for the admission processor every row also
// has a queue: running replicas of the workload and new ones that each
// demand demand (a share of the host).
type dataset struct {
	use     []float64
	peaks   []float32
	running []int
	demand  []float64
	rows    int
	width   int
	slots   int
}

func (d *dataset) useRow(r int) []float64 { return d.use[r*d.width : (r+1)*d.width] }

// peak is the host's usage share with m replicas in row r (m >= 1).
func (d *dataset) peak(r, m int) float64 { return float64(d.peaks[r*d.slots+m-1]) }

// capacityLabel is slot k's capacity label for row r: k+1 replicas fit.
func (d *dataset) capacityLabel(r, k int) float64 {
	if d.peak(r, k+1) <= 1 {
		return 1
	}
	return 0
}

// admissionLabel is slot k's admission label for row r: the k+1 replicas
// fit at their real usage and, the rule for replicas not yet observed, the
// running ones (up to k+1 of them) at their real usage plus the new ones up
// to k at their demand fit too.
func (d *dataset) admissionLabel(r, k int) float64 {
	if d.admissionUsed(r, k) <= 1 {
		return 1
	}
	return 0
}

// admissionUsed is what the queue up to slot k takes of the host in row r
// (its label is whether that is at most 1): the running replicas (up to
// k+1) at their real usage plus the new ones up to k at their demand, and
// never less than the k+1 replicas' real usage.
func (d *dataset) admissionUsed(r, k int) float64 {
	n := d.running[r]
	used := d.peak(r, min(k+1, n)) + float64(max(0, k+1-n))*d.demand[r]
	if k+1 > n {
		used = max(used, d.peak(r, k+1))
	}
	return used
}

func (d *dataset) append(o *dataset) {
	d.use = append(d.use, o.use...)
	d.peaks = append(d.peaks, o.peaks...)
	d.running = append(d.running, o.running...)
	d.demand = append(d.demand, o.demand...)
	d.rows += o.rows
}

// replicaTrace is how a host's usage follows from its replica count in a
// replay: row m-1 of cum holds the summed usage of replicas 0..m-1 at each
// sample; observed is what a policy sees (the mean usage of all replicas).
type replicaTrace struct {
	cum      [][]float32
	observed []float64
}

// replicas builds the replay of series v (normalised) for slots replicas:
// shifted and scaled copies with s.Multiplex, exact copies otherwise. The
// shifts are seeded by the series name, so a series replays the same
// whatever else is trained.
func replicas(name string, v []float64, s Settings) replicaTrace {
	T := len(v)
	rt := replicaTrace{cum: make([][]float32, s.Slots), observed: make([]float64, T)}
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(s.Seed, h.Sum64()))
	acc := make([]float64, T)
	for j := 0; j < s.Slots; j++ {
		shift, scale := 0, 1.0
		if s.Multiplex {
			shift = rng.IntN(s.MaxShift + 1)
			scale = 1 + s.ScaleJitter*(2*rng.Float64()-1)
		}
		row := make([]float32, T)
		for t := range acc {
			acc[t] += scale * v[max(0, t-shift)]
			row[t] = float32(acc[t])
		}
		rt.cum[j] = row
	}
	for t := range acc {
		rt.observed[t] = acc[t] / float64(s.Slots)
	}
	return rt
}

// exampleHostMHz is the CPU capacity of the host every training example
// is observed on; a replica's usage is a share of it.
const exampleHostMHz = 1000.0

// exampleReplicaMHz is the most MHz an example's replica can use per unit
// of its series' p99: its share of the host drawn up to ScaleMax (at the
// p99), times the replicas' scale jitter.
func exampleReplicaMHz(s Settings) float64 {
	most := s.ScaleMax * exampleHostMHz
	if s.Multiplex {
		most *= 1 + s.ScaleJitter
	}
	return most
}

// usable returns a series normalised for examples, or why no example can
// come from it: too short for the window and horizon, no usage, or a
// sample so far above the series' p99 that a window holding it could
// pass the engine's bound on a resource (an outlier, or a change of units
// inside the file). simulate leaves out a series for the same reason,
// against what its own replay would show the engine (up to MaxReplicas
// replicas of the series on one host: a lower cut than training's).
func usable(ser traces.Series, s Settings) (traces.Series, string) {
	if len(ser.Values) < s.Window+s.Horizon+1 {
		return traces.Series{}, fmt.Sprintf("%d samples, fewer than window %d + horizon %d + 1", len(ser.Values), s.Window, s.Horizon)
	}
	norm, err := traces.Normalize(ser, 1)
	if err != nil {
		return traces.Series{}, fmt.Sprintf("too little usage to learn from (%v)", err)
	}
	most := exampleReplicaMHz(s)
	top := 0
	for i, x := range norm.Values {
		if x > norm.Values[top] {
			top = i
		}
	}
	limit := math.Min(engine.MaxResource, engine.MaxUsageRatio*exampleHostMHz)
	if x := norm.Values[top]; x*most > limit {
		return traces.Series{}, fmt.Sprintf("the sample at time %d is %.3g times the series' p99: a training window holding it could show the engine a replica at up to %.3g MHz of a %g MHz host, past its bound of %g MHz; an outlier, or a change of units inside the file",
			norm.Times[top], x, x*most, exampleHostMHz, limit)
	}
	return norm, ""
}

// examples builds the data set of the given series.
func examples(series []traces.Series, s Settings, stats []Statistic, rng *rand.Rand) (dataset, error) {
	d := dataset{width: len(stats), slots: s.Slots}
	names := make([]string, len(stats))
	for i, st := range stats {
		names[i] = st.Usage
	}
	// The admission queue reads the window's mean whatever the trunk
	// reads: when the trunk does not, it is read in the same pass, after
	// the trunk's features, and not kept.
	read := names
	meanAt := slices.Index(names, engine.FeatCPUReplicaMean)
	if meanAt < 0 {
		read = append(slices.Clone(names), engine.FeatCPUReplicaMean)
		meanAt = len(names)
	}
	const capMHz = exampleHostMHz
	samples := make([]engine.Sample, s.Window)
	for _, ser := range series {
		// The caller leaves out a series no example can come from (usable),
		// as simulate leaves it out of a replay (an idle VM of a public
		// trace), and reports it.
		norm, why := usable(ser, s)
		if why != "" {
			return dataset{}, fmt.Errorf("train: series %s: %s", ser.Name, why)
		}
		v := norm.Values
		rt := replicas(ser.Name, v, s)
		reqShare := ustats.Quantile(v[:len(v)/2], 0.99) // careful operator: p99 of the first half
		var points []int
		for t := s.Window; t+s.Horizon <= len(v); t += s.Step {
			points = append(points, t)
		}
		if k := s.MaxRowsPerSeries; k > 0 && len(points) > k {
			kept := make([]int, k)
			for i := range kept {
				kept[i] = points[i*len(points)/k]
			}
			points = kept
		}
		for _, t := range points {
			r := s.ScaleMin * math.Pow(s.ScaleMax/s.ScaleMin, rng.Float64())
			for i := range samples {
				j := t - s.Window + i
				samples[i] = engine.Sample{Time: norm.Times[j], CPUMHz: rt.observed[j] * r * capMHz}
			}
			obs := engine.Observation{
				CPUCapacityMHz: capMHz, Samples: samples, RunningReplicas: 1,
				RequestedCPUMHz: reqShare * r * capMHz, ReplicaCPUDemandMHz: math.Max(reqShare*r*capMHz, 1e-6),
			}
			fx, err := engine.FeatureVector(&obs, "training", read)
			if err != nil {
				return d, fmt.Errorf("train: series %s, the window ending at time %d: %w", ser.Name, norm.Times[t-1], err)
			}
			d.use = append(d.use, fx[:len(names)]...)
			for m := 1; m <= s.Slots; m++ {
				peak := 0.0
				for h := t; h < t+s.Horizon; h++ {
					peak = math.Max(peak, float64(rt.cum[m-1][h]))
				}
				d.peaks = append(d.peaks, float32(peak*r))
			}
			// The admission queue: some replicas running (from one to half
			// again as many as fit at the window's mean), then new ones,
			// each demanding the replica's request. The mean is read
			// whatever statistics the trunk reads, so that an ablation
			// without it trains on the same queues.
			mean := math.Max(fx[meanAt], 1e-3)
			maxRun := max(1, min(s.Slots, int(math.Ceil(1.5/mean))))
			d.running = append(d.running, 1+rng.IntN(maxRun))
			d.demand = append(d.demand, math.Max(reqShare*r, 1e-6))
			d.rows++
		}
	}
	return d, nil
}
