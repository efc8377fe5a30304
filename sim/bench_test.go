package sim

import (
	"context"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// BenchmarkSimulateShared is the speed target: the whole replay of
// the shared series (all twelve), every policy and every knob setting, in
// the scenario, as `activation simulate --split all` runs it (the
// linear ablation fitted on the training split). Goal: under 60 s per op
// on the project's 2-core machine. Run with -benchtime 1x.
func BenchmarkSimulateShared(b *testing.B) {
	all := loadCrane(b)
	trainSet, _ := traces.SplitByName(all, 0.34, 1)
	for i := 0; i < b.N; i++ {
		act, err := Activation(ActivationConfig{})
		if err != nil {
			b.Fatal(err)
		}
		lin, err := Linear(trainSet, Shifted(), LinearConfig{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(context.Background(), all, Shifted(), append(Baselines(), act, lin), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkYardstickBaselines replays the yardstick scenario's baselines.
func BenchmarkYardstickBaselines(b *testing.B) {
	all := loadCrane(b)
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), all, Yardstick(), Baselines(), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
