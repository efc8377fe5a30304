package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

func slowWave(name string, n int, phase float64) traces.Series {
	s := traces.Series{Name: name}
	for i := 0; i < n; i++ {
		s.Times = append(s.Times, int64(60*i))
		s.Values = append(s.Values, 2+math.Sin(2*math.Pi*float64(i)/2000+phase))
	}
	return s
}

// On slowly varying usage the next interval's safe count is almost the
// count the last samples allow, so a least-squares fit on the fit features
// must explain nearly all of it, and the policy's count is
// floor(scale x prediction).
func TestLinearAblationFits(t *testing.T) {
	train := []traces.Series{slowWave("a", 6000, 0), slowWave("b", 6000, 1)}
	feats := []string{engine.FeatCPUFitMaxLast5, engine.FeatCPUFitMax, engine.FeatCPUFitMean}
	p, err := Linear(train, Shifted(), LinearConfig{Features: feats, Slots: 1000, Values: []float64{0.5, 1}})
	if err != nil {
		t.Fatal(err)
	}
	l := p.(*linear)
	if l.r2 < 0.98 {
		t.Fatalf("R^2 %.4f on slowly varying usage, want > 0.98", l.r2)
	}
	r, err := Prepare(slowWave("c", 4000, 2), Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := l.predictions(r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.New(r, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, 2)
	for i := 0; i < r.Decisions(); i += 50 {
		if err := d.Decide(i, []int{0, 0}, out); err != nil {
			t.Fatal(err)
		}
		if want := max(0, int(math.Floor(0.5*pred[0][i]))); out[0] != want || out[1] != want {
			t.Fatalf("decision %d: counts %v, want floor(0.5 x %v) = %d", i, out, pred[0][i], want)
		}
	}
}

func TestLinearRejectsHostFeatures(t *testing.T) {
	_, err := Linear([]traces.Series{slowWave("a", 3000, 0)}, Shifted(), LinearConfig{Features: []string{engine.FeatCPUHostMax}, Slots: 10})
	if err == nil || !strings.Contains(err.Error(), engine.FeatCPUHostMax) {
		t.Fatalf("host feature: %v", err)
	}
	if _, err := Linear(nil, Shifted(), LinearConfig{}); err == nil {
		t.Fatal("no training series accepted")
	}
}
