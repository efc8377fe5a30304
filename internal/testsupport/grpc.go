package testsupport

import (
	"testing"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/nomad-autoscaler/plugins/base"
	"github.com/hashicorp/nomad-autoscaler/plugins/target"
	"github.com/hashicorp/nomad-autoscaler/sdk"
)

// GRPCTarget is impl as the autoscaler agent sees an external target
// plugin: served by the SDK's gRPC servers (the target's and the base
// plugin's, as plugins.Serve registers them), called through the SDK's
// gRPC client. Only a status and an error's text cross, as from a
// plugin's process; a nil status panics, as it does there.
func GRPCTarget(t *testing.T, impl target.Target) target.Target {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		sdk.PluginTypeTarget: &target.PluginTarget{Impl: impl},
		sdk.PluginTypeBase:   &base.PluginBase{Impl: impl},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.PluginTypeTarget)
	if err != nil {
		t.Fatalf("dispense the target over gRPC: %v", err)
	}
	tg, ok := raw.(target.Target)
	if !ok {
		t.Fatalf("the dispensed target is a %T, not a target.Target", raw)
	}
	return tg
}
