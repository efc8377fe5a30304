package provider

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// Environment of the acceptance tests. `make test` sets envTerraformPath to
// the OpenTofu that tools/build-tofu.sh builds.
const (
	envTerraformPath     = "TF_ACC_TERRAFORM_PATH"
	envProviderHost      = "TF_ACC_PROVIDER_HOST"
	envProviderNamespace = "TF_ACC_PROVIDER_NAMESPACE"
	envCLIConfig         = "TF_CLI_CONFIG_FILE"
	howToRun             = "acceptance tests run a real OpenTofu: run `make test`, or set " +
		"TF_ACC_TERRAFORM_PATH=$(tools/build-tofu.sh) (TF_ACC=1 and the OpenTofu registry host/namespace are then set by TestMain)"
)

// accSetupErr is why the acceptance environment is not usable, or "".
var accSetupErr string

// TestMain takes the NOMAD_* variables the tests were started with out of
// the process environment, so that nothing talking to the stand-in (the
// provider, a Nomad API client) can pick up a developer's token,
// namespace, region or TLS files. When NOMAD_ADDR is among them they are
// kept (testsupport.ClusterEnv) for the tests that read the real cluster,
// and the tests that program the stand-in skip (testsupport.StandinOnly).
func TestMain(m *testing.M) {
	testsupport.TakeNomadEnv()
	var tmp string
	accSetupErr, tmp = prepareAccEnv()
	code := m.Run()
	if tmp != "" {
		if err := os.Remove(tmp); err != nil {
			fmt.Fprintf(os.Stderr, "removing the acceptance tests' CLI config: %v\n", err)
		}
	}
	os.Exit(code)
}

// noEnv is an empty environment: what the stand-in tests' provider falls
// back to, whatever the process environment holds.
func noEnv(string) (string, bool) { return "", false }

// prepareAccEnv fills in the environment terraform-plugin-testing needs to
// drive OpenTofu, when a tofu binary is given. It never downloads anything.
// It returns why the environment is not usable ("" when it is) and the
// temporary file it created, to remove after the tests ("" for none).
func prepareAccEnv() (setupErr, tmp string) {
	tf := os.Getenv(envTerraformPath)
	if tf == "" {
		return envTerraformPath + " is not set; " + howToRun, ""
	}
	if st, err := os.Stat(tf); err != nil || st.IsDir() {
		return fmt.Sprintf("%s=%s is not an executable file; %s", envTerraformPath, tf, howToRun), ""
	}
	setDefault := func(k, v string) {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	setDefault("TF_ACC", "1")
	setDefault(envProviderHost, "registry.opentofu.org")
	setDefault(envProviderNamespace, "activation-scheduler")
	// A CLI config that points at a missing file makes tofu fail; give it
	// an empty one of ours (nothing is written in $HOME).
	if c := os.Getenv(envCLIConfig); c == "" || !fileExists(c) {
		f, err := os.CreateTemp("", "activation-acc-*.tfrc")
		if err != nil {
			return "cannot create an empty CLI config: " + err.Error(), ""
		}
		tmp = f.Name()
		if err := f.Close(); err != nil {
			return "cannot create an empty CLI config: " + err.Error(), tmp
		}
		os.Setenv(envCLIConfig, tmp)
	}
	return "", tmp
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// accPreCheck fails the test, loudly, when OpenTofu is not available: an
// acceptance test must never skip silently.
func accPreCheck(t *testing.T) {
	t.Helper()
	if accSetupErr != "" {
		t.Fatal(accSetupErr)
	}
}

// accTest runs tc against the real OpenTofu, in parallel with the others.
func accTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	accParallel(t)
	runAcc(t, tc)
}

// accParallel marks an acceptance test parallel. A test whose expectations
// depend on when it runs (a stand-in's allocations are young, warming,
// for the first two minutes) calls it first, then builds its fixture and
// expectations, then calls runAcc: the test may wait minutes here for the
// others.
func accParallel(t *testing.T) {
	t.Helper()
	accPreCheck(t)
	t.Parallel()
}

// runAcc runs tc against the real OpenTofu (accTest after accParallel).
func runAcc(t *testing.T, tc resource.TestCase) {
	t.Helper()
	tc.PreCheck = func() { accPreCheck(t) }
	stepFactories := false
	for _, s := range tc.Steps {
		stepFactories = stepFactories || s.ProtoV6ProviderFactories != nil
	}
	if tc.ProtoV6ProviderFactories == nil && !stepFactories {
		tc.ProtoV6ProviderFactories = providerFactories
	}
	resource.Test(t, tc)
}

// providerFactories serve the provider with no NOMAD_* fallbacks: the
// tests that use them talk to the stand-in, which must never receive a
// token (or namespace, region, TLS files) from the environment.
var providerFactories = factoriesWithEnv(noEnv)

// factoriesWithEnv serve the provider with its NOMAD_* fallbacks read
// through getenv.
func factoriesWithEnv(getenv func(string) (string, bool)) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		TypeName: providerserver.NewProtocol6WithError(newWithEnv("test", getenv)()),
	}
}

// ---- HCL rendering helpers ----

// hclNum writes a number as an HCL expression. HCL has no literal for an
// infinity (1/0 gives one) nor any way to make a NaN: 0/0 is OpenTofu's
// own error, which is what a configuration that tries gets.
func hclNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "(0/0)"
	case math.IsInf(v, 1):
		return "(1/0)"
	case math.IsInf(v, -1):
		return "(-1/0)"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// hclString quotes s as an HCL string literal with no interpolation; a
// character that is not printable is written as a \u escape.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	q := b.String()
	q = strings.ReplaceAll(q, "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}

// hclObject renders attrs (name -> raw HCL expression) as an object
// constructor, in name order.
func hclObject(attrs map[string]string) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "    %s = %s\n", k, attrs[k])
	}
	b.WriteString("  }")
	return b.String()
}

// observationHCL returns every attribute of o as raw HCL, optional ones
// included only when set (as their JSON form does); an empty queue is
// written as [] (nobody new wants to run), a nil one left out.
func observationHCL(o engine.Observation) map[string]string {
	a := map[string]string{
		obsCPUCapacityMHz:      hclNum(o.CPUCapacityMHz),
		obsRequestedCPUMHz:     hclNum(o.RequestedCPUMHz),
		obsRunningReplicas:     strconv.Itoa(o.RunningReplicas),
		obsReplicaCPUDemandMHz: hclNum(o.ReplicaCPUDemandMHz),
	}
	if o.Host != "" {
		a[obsHost] = hclString(o.Host)
	}
	for name, v := range map[string]float64{
		obsMemoryCapacityMB: o.MemoryCapacityMB, obsRequestedMemoryMB: o.RequestedMemoryMB,
		obsReplicaMemoryDemandMB: o.ReplicaMemoryDemandMB, obsOtherReservedCPUMHz: o.OtherReservedCPUMHz,
		obsOtherReservedMemoryMB: o.OtherReservedMemoryMB,
	} {
		if v != 0 {
			a[name] = hclNum(v)
		}
	}
	for name, v := range map[string]int{obsWarmingReplicas: o.WarmingReplicas, obsWantedReplicas: o.WantedReplicas} {
		if v != 0 {
			a[name] = strconv.Itoa(v)
		}
	}
	var b strings.Builder
	b.WriteString("[\n")
	for _, s := range o.Samples {
		fmt.Fprintf(&b, "      { time = %d, cpu_mhz = %s", s.Time, hclNum(s.CPUMHz))
		if s.MemoryMB != 0 {
			fmt.Fprintf(&b, ", memory_mb = %s", hclNum(s.MemoryMB))
		}
		b.WriteString(" },\n")
	}
	b.WriteString("    ]")
	a[obsUsageSamples] = b.String()
	if o.QueuedReplicas != nil {
		var q strings.Builder
		q.WriteString("[")
		for _, r := range o.QueuedReplicas {
			fmt.Fprintf(&q, "{ cpu_mhz = %s, memory_mb = %s },", hclNum(r.CPUMHz), hclNum(r.MemoryMB))
		}
		q.WriteString("]")
		a[obsQueuedReplicas] = q.String()
	}
	return a
}

// quotaHCL renders a quota spec: only the fields it gives.
func quotaHCL(q *engine.QuotaSpec) string {
	a := map[string]string{}
	if q.Min != nil {
		a[quotaMin] = strconv.Itoa(*q.Min)
	}
	if q.Max != nil {
		a[quotaMax] = strconv.Itoa(*q.Max)
	}
	if q.PerBranch != nil {
		a[quotaPerBranch] = hclNum(*q.PerBranch)
	}
	if q.Rounding != nil {
		a[quotaRounding] = hclString(*q.Rounding)
	}
	return hclObject(a)
}

// requestAttrs renders an engine request as the data source's attributes.
func requestAttrs(r *engine.Request) map[string]string {
	attrs := map[string]string{attrFirst: hclObject(observationHCL(r.First)), attrSecond: hclObject(observationHCL(r.Second))}
	if r.FirstModel != "" {
		attrs[attrFirstModel] = hclString(r.FirstModel)
	}
	if r.SecondModel != "" {
		attrs[attrSecondModel] = hclString(r.SecondModel)
	}
	if r.FirstQuota != nil {
		attrs[attrFirstQuota] = quotaHCL(r.FirstQuota)
	}
	if r.SecondQuota != nil {
		attrs[attrSecondQuota] = quotaHCL(r.SecondQuota)
	}
	if r.MinSamples != 0 {
		attrs[attrMinSamples] = strconv.Itoa(r.MinSamples)
	}
	if r.HoldBand != 0 {
		attrs[attrHoldBand] = strconv.FormatFloat(r.HoldBand, 'g', -1, 64)
	}
	if r.Margin != 0 {
		attrs[attrMargin] = strconv.FormatFloat(r.Margin, 'g', -1, 64)
	}
	if r.FirstMargin != nil { // an explicit 0 included
		attrs[attrFirstMargin] = strconv.FormatFloat(*r.FirstMargin, 'g', -1, 64)
	}
	if r.SecondMargin != nil {
		attrs[attrSecondMargin] = strconv.FormatFloat(*r.SecondMargin, 'g', -1, 64)
	}
	return attrs
}

// countsConfig renders an activation_container_counts data source "test"
// from its attributes (name -> raw HCL), after any extra blocks.
func countsConfig(attrs map[string]string, extra string) string {
	return extra + dataConfig("activation_container_counts", "test", attrs)
}

// dataConfig renders a data source block from its attributes (raw HCL).
func dataConfig(typ, name string, attrs map[string]string) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "\ndata %q %q {\n", typ, name)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %s\n", k, attrs[k])
	}
	b.WriteString("}\n")
	return b.String()
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
