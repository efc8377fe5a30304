// Command host-quota is the Nomad Autoscaler target plugin that applies a
// split decision of the activation-quota strategy to a job's first and
// second task groups. Put the binary in the agent's plugin_dir under this
// name; see docs/nomad/host-quota.md.
package main

import (
	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins"

	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

func main() {
	plugins.Serve(func(log hclog.Logger) interface{} { return nomadplugin.NewTarget(log) })
}
