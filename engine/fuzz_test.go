package engine

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

func FuzzLoadModel(f *testing.F) {
	// The capacity model is a realistic seed; the admission model is too
	// large to parse thousands of times a second, so it is left out.
	for _, name := range []string{"models/capacity.json"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	small, _ := json.Marshal(testModel(
		[]Node{{Name: "x0", Countable: true}, {Name: "x1"}}, []Node{{Name: "o0", Countable: true}}, 0.1, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 2}, {0, -1}}, Biases: []float64{0, 0.5}},
		Layer{Activation: ActivationSigmoid, Weights: [][]float64{{1, 1}}, Biases: []float64{-0.25}},
	))
	f.Add(small)
	f.Add([]byte(`{"format":"activation-model","version":1}`))
	f.Add([]byte(`{"format":"activation-model","version":1,"name":"x","inputs":[{"name":"a"}],"layers":[{"activation":"relu","weights":[[1]],"biases":[0]},{"activation":"tanh","weights":[[1]],"biases":[0]}],"outputs":[{"name":"o"}],"provenance":{"method":"m"}}`))
	// finite weights that overflow on an input of ones: refused when parsed
	f.Add([]byte(`{"format":"activation-model","version":1,"name":"x","inputs":[{"name":"a"}],"layers":[{"activation":"relu","weights":[[1e300]],"biases":[0]},{"activation":"relu","weights":[[1e300]],"biases":[0]},{"activation":"sigmoid","weights":[[1]],"biases":[0]}],"outputs":[{"name":"o"}],"provenance":{"method":"m"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseModel(data)
		if err != nil {
			if m != nil {
				t.Fatal("a model came back with an error")
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed model fails validation: %v", err)
		}
		d1, err := m.Digest()
		if err != nil {
			t.Fatal(err)
		}
		canon, err := m.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseModel(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v", err)
		}
		if d2, _ := m2.Digest(); d2 != d1 {
			t.Fatalf("digest not stable through the canonical form: %s vs %s", d1, d2)
		}
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatalf("valid model does not compile: %v", err)
		}
		x := make([]float64, p.NumInputs())
		for i := range x {
			x[i] = 1
		}
		an, err := p.Analyze(x, NewWorkspace(p))
		if err != nil {
			t.Fatal(err)
		}
		if an.InputAmount > p.CountableInputs() || an.OutputAmount > p.CountableOutputs() {
			t.Fatalf("amounts %d/%d exceed countable %d/%d", an.InputAmount, an.OutputAmount, p.CountableInputs(), p.CountableOutputs())
		}
	})
}

func FuzzDecide(f *testing.F) {
	f.Add(20000.0, 6, 2000.0, 12000.0, 3000.0, 2500.0, 9000.0, 0, 0, 48, 1.0, uint8(0), int64(60))
	f.Add(1000.0, 0, 100.0, 0.0, 0.0, 0.0, 0.0, 3, 2, 5, 0.5, uint8(1), int64(1))
	f.Add(1000.0, 2, 100.0, math.NaN(), 10.0, 10.0, 10.0, 0, 0, 10, 1.0, uint8(2), int64(60))
	f.Add(1000.0, 2, 100.0, -1.0, 10.0, 10.0, 10.0, 0, 0, 10, 1.0, uint8(0), int64(60))
	f.Add(1.0, 1, 1e-300, 1e300, 1.0, 1.0, 1.0, 1, 9, 3, 1e6, uint8(2), int64(0))
	adm, err := Builtin(BuiltinAdmission)
	if err != nil {
		f.Fatal(err)
	}
	capy, err := Builtin(BuiltinCapacity)
	if err != nil {
		f.Fatal(err)
	}
	slots := map[string]int{RoleFirst: adm.CountableInputs(), RoleSecond: capy.CountableOutputs()}
	f.Fuzz(func(t *testing.T, capacity float64, replicas int, demand, u0, u1, u2, u3 float64, wanted, qmin, qmax int, per float64, rounding uint8, step int64) {
		usage := []float64{u0, u1, u2, u3}
		o := Observation{CPUCapacityMHz: capacity, RunningReplicas: replicas, ReplicaCPUDemandMHz: demand, RequestedCPUMHz: demand * float64(max(replicas, 0)), WantedReplicas: wanted}
		for i, u := range usage {
			o.Samples = append(o.Samples, Sample{Time: int64(i) * step, CPUMHz: u})
		}
		q := Quota{Min: qmin, Max: qmax, PerBranch: per, Rounding: []string{RoundNearest, RoundFloor, RoundCeil, "other"}[rounding%4]}
		// (the second host takes no queue: wanted is the first host's)
		second := o
		second.WantedReplicas = 0
		d, err := (&Request{First: o, Second: second, FirstQuota: q.Spec(), SecondQuota: q.Spec(), MinSamples: 1}).Decide()
		bad := false
		for _, u := range usage {
			if math.IsNaN(u) || math.IsInf(u, 0) || u < 0 {
				bad = true
			}
		}
		if bad && err == nil {
			t.Fatalf("usage %v accepted", usage)
		}
		if err != nil {
			if d != nil {
				t.Fatal("decision returned with an error")
			}
			return
		}
		for _, h := range []HostDecision{d.First, d.Second} {
			if h.Containers < q.Min || h.Containers > q.Max {
				t.Fatalf("%s count %d outside [%d, %d]", h.Role, h.Containers, q.Min, q.Max)
			}
			if h.Amount < 0 || h.Amount > slots[h.Role] {
				t.Fatalf("%s amount %d outside [0, %d]", h.Role, h.Amount, slots[h.Role])
			}
		}
		if wanted > 0 && d.First.Amount > wanted {
			t.Fatalf("admitted %d of %d wanted", d.First.Amount, wanted)
		}
	})
}
