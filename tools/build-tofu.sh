#!/usr/bin/env bash
# Builds the pinned OpenTofu CLI from its Go module and caches the binary
# outside the clone, keyed by version. Prints the binary's path on stdout.
# OpenTofu's go.mod has a `replace`, so `go install ...@version` refuses;
# we download the module and build ./cmd/tofu inside it instead.
set -euo pipefail
version="${TOFU_VERSION:-v1.10.6}"
cache="${ACTIVATION_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-activation}"
bin="$cache/tofu/$version/tofu"

have() {
  [ -x "$bin" ] || return 1
  local v
  v=$(TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 "$bin" version 2>/dev/null) || return 1
  [ "${v%%$'\n'*}" = "OpenTofu $version" ]
}
if have; then echo "$bin"; exit 0; fi

mkdir -p "$(dirname "$bin")"
# One build at a time (parallel test runs, the demo and the tests).
exec 9>"$(dirname "$bin")/.lock"
flock 9
if have; then echo "$bin"; exit 0; fi

echo "building OpenTofu $version (about 5 minutes on 2 cores) into $bin" >&2
# Download from an empty directory with workspaces off, so this never reads
# or touches the project's go.mod.
scratch=$(mktemp -d)
tmp="$bin.tmp.$$"
trap 'rm -rf "$scratch" "$tmp"' EXIT
# go mod download -json reports a failure in the JSON on stdout only: keep
# it, to say why.
if ! (cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@$version" >"$scratch/download.json"); then
  cat "$scratch/download.json" >&2 || true
fi
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$scratch/download.json")
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "error: could not download github.com/opentofu/opentofu@$version through the Go module proxy (its answer above)" >&2
  exit 1
fi
if ! (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go build -trimpath -ldflags "-X github.com/opentofu/opentofu/version.dev=no" -o "$tmp" ./cmd/tofu); then
  rm -f "$tmp"
  echo "error: building OpenTofu $version failed" >&2
  exit 1
fi
mv -f "$tmp" "$bin"
if ! have; then
  echo "error: $bin does not report OpenTofu $version" >&2
  exit 1
fi
echo "$bin"
