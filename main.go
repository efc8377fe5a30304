// Command terraform-provider-activation serves the activation provider to
// Terraform and OpenTofu over plugin protocol 6.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/activation-scheduler/terraform-provider-activation/internal/version"
	"github.com/activation-scheduler/terraform-provider-activation/provider"
)

func main() {
	var debug, showVersion bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.BoolVar(&showVersion, "version", false, "print the version and exit (Terraform and OpenTofu start the provider without arguments)")
	flag.Parse()

	if showVersion {
		fmt.Println(version.Line("terraform-provider-activation"))
		return
	}

	// version.Version is set at build time (make build, the release build).
	err := providerserver.Serve(context.Background(), provider.New(version.Version), providerserver.ServeOpts{
		Address:         provider.Address,
		Debug:           debug,
		ProtocolVersion: 6,
	})
	if err != nil {
		log.Fatal(err)
	}
}
