#!/usr/bin/env bash
# The project's whole test run (`make test`). It builds or finds every real
# tool the tests need (OpenTofu, the nomad-autoscaler agent), and fails loudly
# when it cannot: no acceptance or end-to-end test may skip.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp -t activation-test.XXXXXX)
trap 'rm -f "$log"' EXIT

step() { printf '\n== %s\n' "$*"; }

step "gofmt"
make -s fmtcheck
step "go vet"
go vet ./...

step "OpenTofu (real CLI for the acceptance tests)"
tofu=$(tools/build-tofu.sh)
TF_CLI_CONFIG_FILE=/dev/null "$tofu" version 2>&1 | sed -n 1p
step "nomad-autoscaler (real agent for the end-to-end test)"
autoscaler=$(tools/build-autoscaler.sh)
"$autoscaler" version 2>&1 | sed -n 1p

export TF_ACC=1
export TF_ACC_TERRAFORM_PATH="$tofu"
export TF_ACC_PROVIDER_HOST=registry.opentofu.org
export TF_ACC_PROVIDER_NAMESPACE=activation-scheduler
export ACTIVATION_TOFU_PATH="$tofu"
export ACTIVATION_AUTOSCALER_PATH="$autoscaler"
# Never let a developer's own CLI configuration leak into the tests.
export TF_CLI_CONFIG_FILE=/dev/null

step "docs are current"
tools/docs.sh check

# The release configuration builds, archives and checksums the three front
# ends for this machine, and each binary reports the injected version.
step "release check"
if ! make -s release-check; then
  echo "error: make release-check failed (.goreleaser.yml, tools/release.sh): see above" >&2
  exit 1
fi

step "golangci-lint (make lint)"
if ! make -s lint; then
  echo "error: make lint found problems (golangci-lint v2, .golangci.yml): see above" >&2
  exit 1
fi

step "go mod tidy"
if ! make -s tidycheck; then
  echo "error: go.mod/go.sum are not tidy (make tidycheck): apply the diff above with go mod tidy" >&2
  exit 1
fi

step "go test -race (every test, acceptance and end-to-end included)"
set +e
go test -race -count=1 -v -timeout 25m ./... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# Fuzzing is random by nature: a crasher it finds fails the run, and its
# input lands in engine/testdata/fuzz to be kept as a regression seed.
# The budgets are counts of executions (5 to 10 s each on 2 cores), not
# durations: with a -fuzztime duration, Go before 1.27 can fail a target
# with a bare "context deadline exceeded" and no crasher when a worker is
# mid-call at the deadline (go.dev/issue/75804; seen here on FuzzDecide).
step "fuzz (brief)"
for target in FuzzLoadModel FuzzDecide; do
  # A pattern that matches no target fuzzes nothing and passes: the
  # target must exist.
  # (read whole first: grep -q closing the pipe early would fail the
  # listing under pipefail)
  listed=$(go test -list "^$target\$" ./engine)
  if ! grep -qx "$target" <<<"$listed"; then
    echo "error: fuzz target $target not found in ./engine" >&2
    exit 1
  fi
  go test -run '^$' -fuzz "^$target\$" -fuzztime 100000x ./engine
done

step "summary"
pass=$(grep -cE '^\s*--- PASS' "$log" || true)
fail=$(grep -cE '^\s*--- FAIL' "$log" || true)
skip=$(grep -cE '^\s*--- SKIP' "$log" || true)
if grep -qE '^\s*--- SKIP' "$log"; then
  echo "skipped tests:"; grep -E '^\s*--- SKIP' "$log"
fi
# A package that does not build, a panic or the timeout print no
# "--- FAIL" line: name them.
if grep -qE '^(FAIL|panic:)|\[build failed\]|^\s*--- FAIL' "$log"; then
  echo "failures:"; grep -E '^(FAIL|panic:)|\[build failed\]|^\s*--- FAIL' "$log" | head -50
fi
if grep -qE '^\s*--- SKIP' "$log"; then
  # A skipped test is not a passed one: none may skip under make test (a
  # test that needs a real cluster skips only with NOMAD_ADDR set, and
  # then its skip says what the cluster lacks).
  echo "error: $skip test(s) skipped; under make test none may" >&2
  status=1
fi
# Each suite ran: a test of each kind passed (names anchored, so that
# TestClusterTargetEnv does not stand for TestClusterTarget).
for kind in 'TestAcc[A-Za-z_]+' 'TestE2E[A-Za-z_]*' 'TestClusterTarget'; do
  if ! grep -qE "^\s*--- PASS: $kind \(" "$log"; then
    echo "error: no test matching $kind passed: the acceptance/end-to-end suites did not run" >&2
    status=1
  fi
done
echo "$pass passed, $fail failed, $skip skipped"
exit "$status"
