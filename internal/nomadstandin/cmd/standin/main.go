// Command standin serves the Nomad API stand-in (package nomadstandin) as
// its own process, set up from a JSON scenario (nomadstandin.Scenario).
//
//	standin -scenario scenario.json [-addr 127.0.0.1:0]
//
// It prints its URL ("http://127.0.0.1:41234") as the first line of
// standard output, serves until SIGTERM or SIGINT or until its standard
// input reaches end of file (unless -watch-stdin=false), then stops. GET /_standin/requests answers the
// request counts (nomadstandin.RequestCounts); DELETE resets them. PUT
// /_standin/usage sets a group's usage per allocation while it runs (a
// nomadstandin.GroupUsage as JSON).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

func run() error {
	scenarioPath := flag.String("scenario", "", "JSON scenario file (nomadstandin.Scenario); empty: an empty stand-in")
	addr := flag.String("addr", "", "listen address (default: the scenario's Addr, else 127.0.0.1:0)")
	watchStdin := flag.Bool("watch-stdin", true, "stop when standard input reaches end of file")
	flag.Parse()
	var sc nomadstandin.Scenario
	if *scenarioPath != "" {
		b, err := os.ReadFile(*scenarioPath)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &sc); err != nil {
			return fmt.Errorf("scenario %s: %w", *scenarioPath, err)
		}
	}
	if *addr != "" {
		sc.Addr = *addr
	}
	s, err := nomadstandin.NewFromScenario(sc)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println(s.URL())

	done := make(chan struct{}, 2)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		done <- struct{}{}
	}()
	if *watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			done <- struct{}{}
		}()
	}
	<-done
	return nil
}
