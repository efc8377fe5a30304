package testsupport

import (
	"maps"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// Real-cluster mode. Tests talk to the Nomad API stand-in
// (internal/nomadstandin), and every such test must also run against a real
// cluster when NOMAD_ADDR is set, so that users can verify it on theirs.
//
// Each package's TestMain calls TakeNomadEnv before m.Run: it takes every
// NOMAD_* variable out of the process environment, as before (nothing that
// talks to the stand-in may pick up a developer's token, namespace or
// address), and records them, when NOMAD_ADDR is set, for the tests that
// read the real cluster (ClusterEnv). A test that programs the stand-in in
// a way no real cluster can be made to follow (fault injection, fixed
// usage, a fake clock, request counting...) calls StandinOnly: when
// NOMAD_ADDR was given it skips, saying so, rather than pass against the
// stand-in and read as a check of the user's cluster.

// StandinOnlyMarker starts the reason of every StandinOnly skip, followed
// by the test's name and a colon. tools/test.sh accepts skips that carry it
// when it runs with NOMAD_ADDR set, and no skip otherwise.
const StandinOnlyMarker = "[stand-in only]"

// NomadEnv is a set of NOMAD_* variables.
type NomadEnv map[string]string

// Real reports whether e names a real cluster (NOMAD_ADDR is set).
func (e NomadEnv) Real() bool { return e[nomadconn.EnvAddress] != "" }

// Lookup reads e as os.LookupEnv reads the environment (a nomadconn.Getenv).
func (e NomadEnv) Lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

var (
	clusterEnv NomadEnv // written by TakeNomadEnv before m.Run, read-only after
	taken      bool
)

// TakeNomadEnv removes every NOMAD_* variable from the process environment
// and records them for ClusterEnv and StandinOnly; without NOMAD_ADDR
// there is no real cluster, and none is kept. TestMain calls it first.
func TakeNomadEnv() {
	e := NomadEnv(nomadconn.TakeEnv())
	if !e.Real() {
		e = NomadEnv{}
	}
	clusterEnv, taken = e, true
}

// ClusterEnv is the NOMAD_* variables the tests were started with when
// NOMAD_ADDR was among them (empty otherwise): what a test reads the real
// cluster with. It panics when TestMain did not call TakeNomadEnv.
func ClusterEnv() NomadEnv {
	if !taken {
		panic("testsupport: the package's TestMain must call testsupport.TakeNomadEnv before m.Run")
	}
	return maps.Clone(clusterEnv)
}

// StandinOnly skips t when the tests were started with NOMAD_ADDR: t
// programs the stand-in (controls names how: "fault injection", "a fake
// clock"...) and so runs only without a real cluster. It fails t when
// TestMain did not call TakeNomadEnv, as then it cannot tell.
func StandinOnly(t testing.TB, controls string) {
	t.Helper()
	if !taken {
		t.Fatal("testsupport.StandinOnly: the package's TestMain must call testsupport.TakeNomadEnv before m.Run")
	}
	if clusterEnv.Real() {
		t.Skipf("%s %s: this test programs the Nomad API stand-in (%s), which a real cluster cannot be made to do, so it runs only when the tests are started without NOMAD_ADDR; it checked nothing on the cluster at NOMAD_ADDR",
			StandinOnlyMarker, t.Name(), controls)
	}
}
