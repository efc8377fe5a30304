// Command activation-quota is the Nomad Autoscaler strategy plugin that
// computes the first and second host quotas with the activation engine.
// Put the binary in the agent's plugin_dir under this name; see
// docs/nomad/activation-quota.md.
package main

import (
	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins"

	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

func main() {
	plugins.Serve(func(log hclog.Logger) interface{} { return nomadplugin.NewStrategy(log) })
}
