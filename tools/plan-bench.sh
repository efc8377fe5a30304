#!/usr/bin/env bash
# Measures the wall time of `tofu plan` with this provider. Same setup as
# tools/demo.sh: provider built from the tree, dev_overrides in a temporary
# CLI config, a copy of the demo (nothing written in the clone or in $HOME).
#
#   tools/plan-bench.sh [runs] [window]
#     The demo (examples/demo) with 1 and with 200 extra
#     activation_container_counts instances (for_each), and the cost per
#     extra instance.
#     runs: plans timed per size (default 5; the median is kept)
#     window: usage samples per host in the extra instances (default 60, the
#             demo's whole hour; fewer shows how the cost scales with it)
#
#   tools/plan-bench.sh largest [runs]
#     One activation_container_counts whose two observations hold the
#     largest window the engine accepts (engine.MaxSamples = 10,080 samples
#     each, built in HCL from the demo's), against the same configuration
#     without the data source (building the observations in HCL is OpenTofu's
#     own cost, paid in both): what the largest accepted observation costs
#     a plan.
set -euo pipefail
mode=instances
if [ "${1:-}" = largest ]; then
  mode=largest
  shift
fi
runs="${1:-5}"
window="${2:-60}"
max_samples=10080 # engine.MaxSamples
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tofu="$("$root/tools/build-tofu.sh")"
work="$(mktemp -d "${TMPDIR:-/tmp}/activation-plan-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

. "$root/tools/dev-provider.sh"
dev_provider "$work"
export TF_CLI_CONFIG_FILE="$work/tofu.tfrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_CLI_ARGS TF_CLI_ARGS_plan 2>/dev/null || true

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

time_plans() { # in the current directory; prints the median plan wall time in ms
  "$tofu" plan -input=false -no-color -lock=false >warmup.log 2>&1 ||
    { cat warmup.log >&2; exit 1; }
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$tofu" plan -input=false -no-color -lock=false >/dev/null 2>&1
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
  done | median
}

largest_ms() { # $1 = 0: the demo and the largest observations; 1: and a data source reading them
  local dir="$work/largest-$1"
  cp -R "$root/examples/demo" "$dir"
  cat >"$dir/bench.tf" <<TF
locals {
  # The demo's hour repeated to the engine's largest window, one sample a
  # minute: times keep increasing. (range() makes at most 1024 values.)
  sample_index = flatten([for a in range(10) : [for b in range($((max_samples / 10))) : a * $((max_samples / 10)) + b]])
  largest = { for name, o in { first = local.first, second = local.second } : name => merge(o, {
    usage_samples = [for i in local.sample_index : {
      time      = o.usage_samples[0].time + 60 * i
      cpu_mhz   = o.usage_samples[i % length(o.usage_samples)].cpu_mhz
      memory_mb = o.usage_samples[i % length(o.usage_samples)].memory_mb
    }]
  }) }
}

output "largest_samples" {
  value = [length(local.largest.first.usage_samples), length(local.largest.second.usage_samples)]
}
TF
  if [ "$1" = 1 ]; then
    cat >>"$dir/bench.tf" <<TF

data "activation_container_counts" "largest" {
  first        = local.largest.first
  second       = local.largest.second
  first_quota  = { min = 1, max = 24 }
  second_quota = { min = 1, max = 24 }
}

output "largest_counts" {
  value = [data.activation_container_counts.largest.first_containers, data.activation_container_counts.largest.second_containers]
}
TF
  fi
  (
    cd "$dir"
    export TF_DATA_DIR="$dir/.terraform"
    time_plans
  )
}

if [ "$mode" = largest ]; then
  base=$(largest_ms 0)
  big=$(largest_ms 1)
  echo "tofu plan, demo + 2 observations of $max_samples samples built in HCL:    ${base} ms (median of $runs)"
  echo "tofu plan, the same + activation_container_counts reading them: ${big} ms (median of $runs)"
  awk -v a="$base" -v b="$big" 'BEGIN { printf "cost of the data source with the largest accepted observation on both hosts: %.2f s\n", (b - a) / 1000 }'
  exit 0
fi

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
    time_plans
  )
}

one=$(plan_ms 1)
many=$(plan_ms 200)
echo "extra instances observe $window usage samples per host"
echo "tofu plan, demo + 1 extra activation_container_counts:   ${one} ms (median of $runs)"
echo "tofu plan, demo + 200 extra activation_container_counts: ${many} ms (median of $runs)"
awk -v a="$one" -v b="$many" 'BEGIN { printf "cost per extra instance: %.2f ms\n", (b - a) / 199 }'
