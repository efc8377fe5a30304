#!/usr/bin/env bash
# Runs the demo: builds the provider, gets the pinned OpenTofu (building it
# when it is not cached), and runs `tofu plan` and `tofu apply` on a copy of
# examples/demo with a CLI config of its own (dev_overrides through
# TF_CLI_CONFIG_FILE, in a temporary directory: nothing is written in $HOME
# or in the clone). Prints the two counts, the explanation and the rendered
# jobspec, whose task groups reserve the decisions' placement reservation
# so that Nomad can place every replica.
#
# KEEP_DEMO_DIR=1 keeps the temporary directory and says where it is.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

tofu="$("$root/tools/build-tofu.sh")"

work="$(mktemp -d "${TMPDIR:-/tmp}/activation-demo.XXXXXX")"
cleanup() {
  if [ "${KEEP_DEMO_DIR:-}" = 1 ]; then
    echo "demo directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

. "$root/tools/dev-provider.sh"
echo "==> building the provider" >&2
dev_provider "$work"

cp -R "$root/examples/demo" "$work/demo"
rm -rf "$work/demo/.terraform" "$work/demo"/terraform.tfstate* "$work/demo/.terraform.lock.hcl"

export TF_CLI_CONFIG_FILE="$work/tofu.tfrc"
export TF_DATA_DIR="$work/demo/.terraform"
export TF_IN_AUTOMATION=1
export CHECKPOINT_DISABLE=1
unset TF_CLI_ARGS TF_CLI_ARGS_plan TF_CLI_ARGS_apply TF_WORKSPACE 2>/dev/null || true

cd "$work/demo"
echo "==> tofu plan (the counts are known at plan time)" >&2
"$tofu" plan -input=false -no-color -compact-warnings >"$work/plan.log" 2>&1 ||
  { cat "$work/plan.log" >&2; echo "error: tofu plan failed" >&2; exit 1; }
grep -E '^ *(data\.|Plan:|\+ (first|second)_containers)' "$work/plan.log" >&2 || true
echo "==> tofu apply -auto-approve" >&2
"$tofu" apply -input=false -auto-approve -no-color -compact-warnings >"$work/apply.log" 2>&1 ||
  { cat "$work/apply.log" >&2; echo "error: tofu apply failed" >&2; exit 1; }
grep -E '^(terraform_data\.|Apply complete)' "$work/apply.log" >&2 || true

first="$("$tofu" output -raw first_containers)"
second="$("$tofu" output -raw second_containers)"
echo
echo "first host  (pool-a, admission processor, input layer):  $first containers"
echo "second host (pool-b, capacity processor, output layer): $second containers"
echo
"$tofu" output -raw explanation
echo
echo "---- rendered Nomad jobspec ----"
"$tofu" output -raw jobspec
echo "--------------------------------"
