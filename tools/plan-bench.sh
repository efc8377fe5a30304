#!/usr/bin/env bash
# Measures the wall time of `tofu plan` on the demo (examples/demo) with 1
# and with 200 extra activation_container_counts instances (for_each), and
# prints the cost per extra instance. Same setup as tools/demo.sh: provider
# built from the tree, dev_overrides in a temporary CLI config, a copy of
# the demo (nothing written in the clone or in $HOME).
#
#   tools/plan-bench.sh [runs] [window]
#     runs: plans timed per size (default 5; the median is kept)
#     window: usage samples per host in the extra instances (default 60, the
#             demo's whole hour; fewer shows how the cost scales with it)
set -euo pipefail
runs="${1:-5}"
window="${2:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tofu="$("$root/tools/build-tofu.sh")"
work="$(mktemp -d "${TMPDIR:-/tmp}/activation-plan-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

. "$root/tools/dev-provider.sh"
dev_provider "$work"
export TF_CLI_CONFIG_FILE="$work/tofu.tfrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_CLI_ARGS TF_CLI_ARGS_plan 2>/dev/null || true

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

plan_ms() { # $1 = extra instances; prints the median plan wall time in ms
  local n="$1" dir="$work/demo-$1"
  cp -R "$root/examples/demo" "$dir"
  cat >"$dir/bench.tf" <<TF
data "activation_container_counts" "bench" {
  for_each = toset([for i in range($n) : tostring(i)])

  first = merge(local.first, {
    host          = "pool-a-\${each.key}"
    usage_samples = slice(local.first.usage_samples, 0, $window)
  })
  second = merge(local.second, {
    host          = "pool-b-\${each.key}"
    usage_samples = slice(local.second.usage_samples, 0, $window)
  })
  first_quota  = { min = 1, max = 24 }
  second_quota = { min = 1, max = 24 }
}

output "bench_first_total" {
  value = sum(concat([0], [for d in data.activation_container_counts.bench : d.first_containers]))
}
TF
  (
    cd "$dir"
    export TF_DATA_DIR="$dir/.terraform"
    "$tofu" plan -input=false -no-color -lock=false >"$dir/warmup.log" 2>&1 ||
      { cat "$dir/warmup.log" >&2; exit 1; }
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      "$tofu" plan -input=false -no-color -lock=false >/dev/null 2>&1
      end=$(date +%s%N)
      echo $(((end - start) / 1000000))
    done | median
  )
}

one=$(plan_ms 1)
many=$(plan_ms 200)
echo "extra instances observe $window usage samples per host"
echo "tofu plan, demo + 1 extra activation_container_counts:   ${one} ms (median of $runs)"
echo "tofu plan, demo + 200 extra activation_container_counts: ${many} ms (median of $runs)"
awk -v a="$one" -v b="$many" 'BEGIN { printf "cost per extra instance: %.2f ms\n", (b - a) / 199 }'
