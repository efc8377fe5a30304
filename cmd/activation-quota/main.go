// Command activation-quota is the Nomad Autoscaler strategy plugin that
// computes the first and second host quotas with the activation engine.
// Put the binary in the agent's plugin_dir under this name; see
// docs/nomad/activation-quota.md.
package main

import (
	"fmt"
	"os"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins"

	"github.com/activation-scheduler/terraform-provider-activation/internal/version"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

func main() {
	// The agent starts plugins without arguments (or with the plugin block's
	// args, which this plugin takes none of), so a lone "version" argument
	// is safe to answer before serving.
	if len(os.Args) == 2 && version.IsRequest(os.Args[1]) {
		fmt.Println(version.Line("activation-quota"))
		return
	}
	plugins.Serve(func(log hclog.Logger) interface{} {
		log.Info("starting plugin", "plugin", "activation-quota", "version", version.Version, "commit", version.Commit)
		return nomadplugin.NewStrategy(log)
	})
}
