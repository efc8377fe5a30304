package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/activation-scheduler/terraform-provider-activation/provider"
)

// debugAddresses are the addresses the debug mode's reattach configuration
// names the provider by: OpenTofu resolves the source
// activation-scheduler/activation to the first, Terraform to the second, and
// each CLI attaches to the entry whose address a configuration resolves to
// (an entry for the other CLI's registry is unused). One line serves both.
var debugAddresses = []string{provider.OpenTofuAddress, provider.Address}

// reattachTimeout bounds the wait for the plugin server to listen.
const reattachTimeout = 10 * time.Second

// serveDebug serves the provider for a debugger (-debug): it prints the
// TF_REATTACH_PROVIDERS line to out, and serves until ctx ends.
func serveDebug(ctx context.Context, out io.Writer, factory func() tfprotov6.ProviderServer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// go-plugin sends the configuration once, without watching ctx: a
	// buffered channel never holds it up.
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- tf6server.Serve(provider.Address, factory, tf6server.WithDebug(ctx, reattach, closed))
	}()
	// fail stops the server before returning err (and what stopping it
	// said, if it failed).
	fail := func(err error) error {
		cancel()
		select {
		case serr := <-served:
			return errors.Join(err, serr)
		case <-time.After(reattachTimeout):
			return err
		}
	}
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case err := <-served:
		if err == nil {
			err = errors.New("the plugin server stopped before it listened")
		}
		return fmt.Errorf("serving the provider for a debugger: %w", err)
	case <-time.After(reattachTimeout):
		return fail(fmt.Errorf("serving the provider for a debugger: no listening address after %s", reattachTimeout))
	}
	line, err := reattachLine(rc)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(out, "Provider started for a debugger. To attach OpenTofu or Terraform, set in their environment:\n\n\t%s\n\nStop it with Ctrl-C.\n", line)
	<-closed
	return <-served
}

// reattachLine is the TF_REATTACH_PROVIDERS assignment for rc, quoted for a
// POSIX shell, with one entry per debug address.
func reattachLine(rc *plugin.ReattachConfig) (string, error) {
	if rc == nil || rc.Addr == nil {
		return "", errors.New("serving the provider for a debugger: the plugin server gave no address")
	}
	// The shape both CLIs parse (go-plugin's ReattachConfig does not
	// encode its address as they read it).
	type addr struct {
		Network string
		String  string
	}
	type entry struct {
		Protocol        string
		ProtocolVersion int
		Pid             int
		Test            bool
		Addr            addr
	}
	m := map[string]entry{}
	for _, a := range debugAddresses {
		m[a] = entry{Protocol: string(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Pid: rc.Pid, Test: rc.Test,
			Addr: addr{Network: rc.Addr.Network(), String: rc.Addr.String()}}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding the reattach configuration: %w", err)
	}
	return "TF_REATTACH_PROVIDERS='" + strings.ReplaceAll(string(data), "'", `'"'"'`) + "'", nil
}
