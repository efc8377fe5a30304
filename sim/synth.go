package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// SynthConfig shapes a synthetic usage series. Start from DefaultSynth:
// a zero field means none of that component (no cycle, no noise, no
// bursts, no shifts).
type SynthConfig struct {
	Samples  int     // number of samples
	Period   int64   // seconds between samples
	Day      int     // samples per daily cycle
	Base     float64 // mean level
	Daily    float64 // amplitude of the daily cycle, a share of the level
	Noise    float64 // standard deviation of the AR(1) noise's innovations, a share of the level
	AR       float64 // AR(1) coefficient of the noise, in [0, 1)
	Bursts   float64 // probability that a burst starts at a sample
	BurstLen int     // mean burst length in samples
	BurstAmp float64 // burst height, a multiple of the level
	Shifts   float64 // probability of a level shift at a sample
}

// DefaultSynth is a minute-resolution day-cycled service with bursts and
// occasional level shifts.
func DefaultSynth() SynthConfig {
	return SynthConfig{Samples: 10080, Period: 60, Day: 1440, Base: 1, Daily: 0.5, Noise: 0.035, AR: 0.9,
		Bursts: 0.002, BurstLen: 8, BurstAmp: 1.5, Shifts: 0.0003}
}

// Synthetic generates a seeded usage series: a daily cycle with a random
// phase, AR(1) noise, bursts and level shifts. The same name, seed and
// configuration always give the same series; it is for scale tests and for
// trying the simulator on more series than the real ones.
func Synthetic(name string, seed uint64, c SynthConfig) (traces.Series, error) {
	switch {
	case c.Samples < 1 || c.Period < 1 || c.Day < 2 || !(c.Base > 0) || c.BurstLen < 1:
		return traces.Series{}, fmt.Errorf("synthetic %s: samples, period, day, base and burst length must be positive (day at least 2)", name)
	case c.Daily < 0 || c.Daily >= 1 || c.Noise < 0 || c.AR < 0 || c.AR >= 1 || c.BurstAmp < 0:
		return traces.Series{}, fmt.Errorf("synthetic %s: daily in [0, 1), noise >= 0, ar in [0, 1), burst amplitude >= 0", name)
	case c.Bursts < 0 || c.Bursts > 1 || c.Shifts < 0 || c.Shifts > 1:
		return traces.Series{}, fmt.Errorf("synthetic %s: burst and shift probabilities must be in [0, 1]", name)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	s := traces.Series{Name: name, Times: make([]int64, c.Samples), Values: make([]float64, c.Samples)}
	phase := rng.Float64() * 2 * math.Pi
	level, noise, burst := c.Base, 0.0, 0
	for i := range s.Values {
		if rng.Float64() < c.Shifts {
			level *= math.Exp(0.4 * rng.NormFloat64())
		}
		noise = c.AR*noise + c.Noise*rng.NormFloat64()
		if burst == 0 && rng.Float64() < c.Bursts {
			burst = 1 + rng.IntN(2*c.BurstLen)
		}
		v := level * (1 + c.Daily*math.Sin(2*math.Pi*float64(i)/float64(c.Day)+phase) + noise)
		if burst > 0 {
			v += level * c.BurstAmp
			burst--
		}
		s.Times[i] = 1600000000 + int64(i)*c.Period
		s.Values[i] = math.Max(v, 0)
	}
	return s, nil
}
