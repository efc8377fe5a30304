package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "0.2.0", "abc1234"
	want := "0.2.0 (abc1234), " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if got := String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := Line("activation"); got != "activation "+want {
		t.Errorf("Line() = %q", got)
	}
}

func TestFromBuildInfo(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	info := &debug.BuildInfo{
		Main:     debug.Module{Path: Module, Version: "v0.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}},
	}
	read := func() (*debug.BuildInfo, bool) { return info, true }

	Version, Commit = "dev", "unknown"
	fromBuildInfo(read)
	if Version != "0.2.0" || Commit != "0123456789ab" {
		t.Errorf("from build info: %q %q", Version, Commit)
	}

	// What the linker set wins.
	Version, Commit = "0.3.0-1-gfeed", "feedbee"
	fromBuildInfo(read)
	if Version != "0.3.0-1-gfeed" || Commit != "feedbee" {
		t.Errorf("linker values replaced: %q %q", Version, Commit)
	}

	// A build inside the module's own tree is "(devel)": stays "dev".
	info.Main.Version = "(devel)"
	info.Settings = nil
	Version, Commit = "dev", "unknown"
	fromBuildInfo(read)
	if Version != "dev" || Commit != "unknown" {
		t.Errorf("devel build: %q %q", Version, Commit)
	}
	fromBuildInfo(func() (*debug.BuildInfo, bool) { return nil, false })
	if Version != "dev" {
		t.Errorf("no build info: %q", Version)
	}
}

func TestIsRequest(t *testing.T) {
	for _, a := range []string{"version", "-version", "--version"} {
		if !IsRequest(a) {
			t.Errorf("IsRequest(%q) = false", a)
		}
	}
	for _, a := range []string{"", "-v", "versions", "serve"} {
		if IsRequest(a) {
			t.Errorf("IsRequest(%q) = true", a)
		}
	}
	if strings.TrimSpace(trimV("v1.2.3")) != "1.2.3" || trimV("vx") != "vx" || trimV("abc") != "abc" {
		t.Error("trimV")
	}
}
