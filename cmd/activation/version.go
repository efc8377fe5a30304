package main

import (
	"fmt"

	"github.com/activation-scheduler/terraform-provider-activation/internal/version"
)

var versionHelp = help{
	synopsis: "",
	description: `Print the version line: "activation <version> (<commit>), <go version>
<os>/<arch>". The version and commit are set at build time (make build, the
release build); a plain go build says "dev". 'activation --version' is the
same.`,
	examples: []string{
		"# the version of this binary",
		"activation version",
	},
}

// cmdVersion prints "activation <version> (<commit>), <go version> <os>/<arch>"
// (`activation version`, `activation --version`).
func cmdVersion(args []string, e env) error {
	fs := newFlags("version", versionHelp)
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, version.Line("activation"))
	return err
}
