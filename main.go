// Command terraform-provider-activation serves the activation provider to
// Terraform and OpenTofu over plugin protocol 6.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/activation-scheduler/terraform-provider-activation/internal/version"
	"github.com/activation-scheduler/terraform-provider-activation/provider"
)

func main() {
	var debug, showVersion bool
	flag.BoolVar(&debug, "debug", false, "run the provider for a debugger such as delve: it prints the TF_REATTACH_PROVIDERS value that attaches OpenTofu or Terraform to it")
	flag.BoolVar(&showVersion, "version", false, "print the version and exit (Terraform and OpenTofu start the provider without arguments)")
	flag.Parse()

	if showVersion {
		fmt.Println(version.Line("terraform-provider-activation"))
		return
	}

	// version.Version is set at build time (make build, the release build).
	var err error
	if debug {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = serveDebug(ctx, os.Stdout, providerserver.NewProtocol6(provider.New(version.Version)()))
		stop()
	} else {
		err = providerserver.Serve(context.Background(), provider.New(version.Version), providerserver.ServeOpts{
			Address:         provider.Address,
			ProtocolVersion: 6,
		})
	}
	if err != nil {
		log.Fatal(err)
	}
}
