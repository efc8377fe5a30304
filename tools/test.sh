#!/usr/bin/env bash
# The project's whole test run (`make test`). It builds or finds every real
# tool the tests need (OpenTofu, the nomad-autoscaler agent), and fails loudly
# when it cannot: no acceptance or end-to-end test may skip. With NOMAD_ADDR
# set (the tests then run on that cluster), the tests that program the
# stand-in skip as stand-in only, and are listed; no other test may skip.
set -euo pipefail
# (bash 4.4 or later: an empty array expands under set -u only from 4.4 on)
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 4))); then
  echo "error: tools/test.sh needs bash 4.4 or later; this is bash $BASH_VERSION" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
log=$(mktemp -t activation-test.XXXXXX)
trap 'rm -f "$log"' EXIT

step() { printf '\n== %s\n' "$*"; }
# What a go test -v log says: a package that does not build, a panic or the
# timeout print no "--- FAIL" line, hence the other patterns; and the tests
# that skipped, a line each: the package, the test's name and whether its
# skip was a stand-in-only one (testsupport.StandinOnly's marker, then the
# test's name, in that package's output: go test -v prints each package's
# output whole, ended by its ok or FAIL line, so a same-named test of
# another package cannot vouch for it).
failed_re='^(FAIL|panic:)|\[build failed\]|^\s*--- FAIL'
skips() {
  awk '
    /^[ \t]*--- SKIP: / { n++; name[n] = $3 }
    /\[stand-in only\] [^ ]+: / {
      s = $0; sub(/.*\[stand-in only\] /, "", s); sub(/: .*/, "", s); marked[s] = 1
    }
    /^(ok|FAIL|\?)[ \t]+[^ \t]+/ && NF >= 2 {
      for (i = 1; i <= n; i++) print $2 "\t" name[i] "\t" ((name[i] in marked) ? "stand-in-only" : "other")
      n = 0; split("", marked)
    }
    END { for (i = 1; i <= n; i++) print "(unfinished)\t" name[i] "\t" ((name[i] in marked) ? "stand-in-only" : "other") }
  ' "$1"
}
# leaf_passes NAME LOG: how many subtests of test NAME, at any depth, passed
# with no subtest of their own (a test whose subtests all skip passes, so
# only a leaf's PASS says something ran).
leaf_passes() {
  awk -v name="$1" '
    $1 == "---" && ($2 == "PASS:" || $2 == "FAIL:" || $2 == "SKIP:") && index($3, name "/") == 1 {
      result[$3] = $2
    }
    END {
      n = 0
      for (t in result) {
        if (result[t] != "PASS:") continue
        leaf = 1
        for (u in result) if (index(u, t "/") == 1) { leaf = 0; break }
        n += leaf
      }
      print n
    }
  ' "$2"
}

step "gofmt"
make -s fmtcheck
step "go vet (linux, and darwin and windows for the files only they build)"
go vet ./...
GOOS=darwin go vet ./...
GOOS=windows go vet ./...

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
step "examples are tofu fmt clean"
if ! "$tofu" fmt -check -recursive examples; then
  echo "error: the HCL files listed above are not formatted: run $tofu fmt -recursive examples" >&2
  exit 1
fi

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
# Each input that widens coverage is minimized before it joins the corpus,
# 60 s per attempt by default: with the capacity model's 46 KB as a seed,
# FuzzLoadModel once spent 4 minutes minimizing (of a test's 10-minute
# timeout), so minimizing is bounded by a count of executions too.
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
  go test -run '^$' -fuzz "^$target\$" -fuzztime 100000x -fuzzminimizetime 500x ./engine
done

# The real-cluster paths of the usage reader's and the provider's tests
# (NOMAD_ADDR set), against a stand-in in its own process as the cluster
# (tools/standin-cluster.json), so that they cannot rot unnoticed where no
# real cluster is: the tests that program the stand-in skip as stand-in
# only, every real-cluster test must pass, and the converted ones must
# have run. None of the caller's NOMAD_* variables reaches this step.
step "real-cluster paths (nomadusage, provider) against a stand-in process"
usage_real=(TestReadHosts TestReadHostsBadInput TestReadNodeUsageBadFigure TestReadHostsStatsSample TestReadHostsNoStatsWithoutJob
  TestReadWholeNode TestReadJobGroup TestReadErrors)
provider_real=(TestHostUsageInterruptedBetweenSamples TestHostUsageSharedConnection TestHostUsageReadInProcess
  TestAccHostUsage_cluster)
standin_dir=$(mktemp -d -t activation-standin.XXXXXX)
trap 'rm -f "$log"; rm -rf "$standin_dir"' EXIT
# real_cluster_paths runs the step; it returns 1 on any failure, after
# saying why (the summary below is printed either way).
real_cluster_paths() {
  local realstatus=0 name
  if ! go build -o "$standin_dir/standin" ./internal/nomadstandin/cmd/standin; then
    echo "error: the stand-in command did not build (internal/nomadstandin/cmd/standin)" >&2
    return 1
  fi
  # It prints its URL, then serves until its standard input (the
  # coprocess pipe) closes. None of the caller's NOMAD_* variables (a
  # token among them) reaches it.
  local -a unset_nomad=()
  while IFS= read -r name; do unset_nomad+=(-u "$name"); done < <(compgen -e | grep '^NOMAD_' || true)
  coproc STANDIN { exec env "${unset_nomad[@]}" "$standin_dir/standin" -scenario tools/standin-cluster.json; }
  # (":-": a stand-in that exited at once is reaped and STANDIN unset)
  local standin_out=${STANDIN[0]:-} standin_in=${STANDIN[1]:-} standin_pid=${STANDIN_PID:-} standin_url=
  if [ -z "$standin_out" ]; then
    echo "error: the stand-in process did not start (tools/standin-cluster.json)" >&2
    return 1
  fi
  if ! read -r -t 30 standin_url <&"$standin_out" || [[ $standin_url != http://* ]]; then
    echo "error: the stand-in process did not start (tools/standin-cluster.json)" >&2
    kill "$standin_pid" 2>/dev/null || true
    return 1
  fi
  # The scenario's one ACL token (on its own line in the file).
  local standin_token provider_run
  standin_token=$(sed -nE 's/^ *"Token": *"([^"]+)".*/\1/p' tools/standin-cluster.json)
  provider_run="^($(IFS='|'; echo "${provider_real[*]}"))\$"
  (
    while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^NOMAD_' || true)
    export NOMAD_ADDR="$standin_url" NOMAD_TOKEN="$standin_token"
    go test -race -count=1 -v -timeout 5m ./nomadusage
    usage=$?
    go test -race -count=1 -v -timeout 5m -run "$provider_run" ./provider || exit 1
    exit "$usage"
  ) 2>&1 | tee "$standin_dir/log"
  realstatus=${PIPESTATUS[0]}
  exec {standin_in}>&-
  wait "$standin_pid" 2>/dev/null || true
  local rlog="$standin_dir/log"
  if grep -qE "$failed_re" "$rlog"; then
    realstatus=1
  fi
  # Each named test passed; one with subtests passed at least one that
  # has none of its own (a parent passes when all its subtests skip).
  for name in "${usage_real[@]}" "${provider_real[@]}"; do
    if ! grep -qE "^--- PASS: $name \(" "$rlog"; then
      echo "error: $name did not pass on its real-cluster path" >&2
      realstatus=1
    elif grep -qE "^\s+--- (PASS|FAIL|SKIP): $name/" "$rlog" && [ "$(leaf_passes "$name" "$rlog")" = 0 ]; then
      echo "error: $name passed on its real-cluster path with every subtest skipped" >&2
      realstatus=1
    fi
  done
  # Every skip there is a stand-in-only one, and there are some (else the
  # tests did not see NOMAD_ADDR).
  local pkg kind skiplist
  if ! skiplist=$(skips "$rlog"); then
    echo "error: could not read the skipped tests from the real-cluster log" >&2
    return 1
  fi
  while IFS=$'\t' read -r pkg name kind; do
    if [ -n "$name" ] && [ "$kind" != stand-in-only ]; then
      echo "error: $name ($pkg) skipped on the real-cluster path, not as stand-in only" >&2
      realstatus=1
    fi
  done <<<"$skiplist"
  if ! grep -qF '[stand-in only] ' "$rlog"; then
    echo "error: no test skipped as stand-in only: the tests did not take the real-cluster path" >&2
    realstatus=1
  fi
  return "$realstatus"
}
set +e
real_cluster_paths
realstatus=$?
set -e
if [ "$realstatus" != 0 ]; then
  echo "error: the real-cluster paths failed against the stand-in process: see above" >&2
  status=1
fi

step "summary"
pass=$(grep -cE '^\s*--- PASS' "$log" || true)
fail=$(grep -cE '^\s*--- FAIL' "$log" || true)
skip=$(grep -cE '^\s*--- SKIP' "$log" || true)
# With NOMAD_ADDR (make test on a real cluster) the tests that program the
# stand-in skip, each saying so: testsupport.StandinOnly's marker, then its
# name. Those skips are expected then, and only then; any other skip fails
# the run.
standin=() others=()
if ! skiplist=$(skips "$log"); then
  echo "error: could not read the skipped tests from the test log" >&2
  status=1
fi
while IFS=$'\t' read -r pkg name kind; do
  [ -n "$name" ] || continue
  if [ -n "${NOMAD_ADDR:-}" ] && [ "$kind" = stand-in-only ]; then
    standin+=("$name ($pkg)")
  else
    others+=("$name ($pkg)")
  fi
done <<<"${skiplist:-}"
if [ "${#standin[@]}" != 0 ]; then
  echo "skipped as stand-in only (they program the stand-in; NOMAD_ADDR is set):"
  printf '  %s\n' "${standin[@]}"
fi
if [ "${#others[@]}" != 0 ]; then
  echo "skipped tests:"; printf '  %s\n' "${others[@]}"
fi
if grep -qE "$failed_re" "$log"; then
  echo "failures:"; grep -E "$failed_re" "$log" | head -50
fi
if [ "${#others[@]}" != 0 ]; then
  # A skipped test is not a passed one: none may skip under make test but,
  # with NOMAD_ADDR set, the stand-in-only ones (a test that needs what a
  # real cluster lacks skips saying so, and fails the run).
  echo "error: ${#others[@]} test(s) skipped; under make test none may (but stand-in-only ones with NOMAD_ADDR set)" >&2
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
echo "$pass passed, $fail failed, $skip skipped (${#standin[@]} of them stand-in only)"
exit "$status"
