// Package version is the build's version, shared by every binary of the
// project: the provider (main.go), the command line (cmd/activation) and the
// two Nomad Autoscaler plugins (cmd/activation-quota, cmd/host-quota).
//
// Version and Commit are set at link time:
//
//	go build -ldflags "-X github.com/activation-scheduler/terraform-provider-activation/internal/version.Version=0.2.0 \
//	                   -X github.com/activation-scheduler/terraform-provider-activation/internal/version.Commit=abc1234"
//
// `make build` sets them from `git describe --tags --always --dirty` and the
// commit; the release build (.goreleaser.yml) from the release tag. A plain
// `go build` leaves Version "dev", unless the binary was built from a
// published module version (`go install ...@v0.2.0`), whose version and VCS
// revision are then read from the binary's build information.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Module is this project's module path (the prefix of the -X flags).
const Module = "github.com/activation-scheduler/terraform-provider-activation"

var (
	// Version is the release version without a leading "v" (0.2.0), or
	// git describe's output for a development build (0.1.0-3-gabc1234-dirty,
	// or a bare commit when there is no tag), or "dev".
	Version = "dev"
	// Commit is the abbreviated commit the binary was built from, or
	// "unknown".
	Commit = "unknown"
)

func init() { fromBuildInfo(debug.ReadBuildInfo) }

// fromBuildInfo fills in what the linker did not set from the module's
// build information, when it has any.
func fromBuildInfo(read func() (*debug.BuildInfo, bool)) {
	if Version != "dev" && Commit != "unknown" {
		return
	}
	bi, ok := read()
	if !ok || bi == nil {
		return
	}
	if v := bi.Main.Version; Version == "dev" && v != "" && v != "(devel)" {
		Version = trimV(v)
	}
	if Commit == "unknown" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				Commit = s.Value
				if len(Commit) > 12 {
					Commit = Commit[:12]
				}
			}
		}
	}
}

// trimV drops the "v" of a semantic version tag (v0.2.0 -> 0.2.0).
func trimV(v string) string {
	if len(v) > 1 && v[0] == 'v' && v[1] >= '0' && v[1] <= '9' {
		return v[1:]
	}
	return v
}

// String is the version line's tail: "<version> (<commit>), <go version>
// <os>/<arch>", as in "0.2.0 (abc1234), go1.26.8 linux/amd64".
func String() string {
	return fmt.Sprintf("%s (%s), %s %s/%s", Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Line is a program's version line: "<program> " + String().
func Line(program string) string { return program + " " + String() }

// IsRequest reports whether a lone command-line argument asks for the
// version: "version", "-version" or "--version".
func IsRequest(arg string) bool {
	switch arg {
	case "version", "-version", "--version":
		return true
	}
	return false
}
