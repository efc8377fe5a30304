#!/usr/bin/env bash
# Shared by tools/build-goreleaser.sh and tools/build-golangci-lint.sh (source
# it, then call build_gotool): builds one pinned tool from its own Go module,
# inside the downloaded module (its go.mod and go.sum, never the project's),
# and caches the binary outside the clone, keyed by version:
#
#   ${ACTIVATION_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-activation}/<name>/<version>/<name>
#
# Like tools/build-tofu.sh: downloads with `go mod download -json` from an
# empty directory (GOWORK=off GOFLAGS=-mod=mod), so the project's go.mod is
# never read or touched; builds inside the module directory, which also
# works for modules whose go.mod has `replace` directives (where
# `go install module@version` refuses); one build at a time (flock).
#
#   build_gotool NAME MODULE VERSION PACKAGE LDFLAGS CHECK
#
# PACKAGE is relative to the module root (./cmd/x or .); CHECK is a shell
# function name called with the binary's path that succeeds when the binary
# runs and reports VERSION. Prints the binary's path on stdout; progress and
# errors go to stderr; fails loudly (non-zero exit).

build_gotool() {
  local name="$1" module="$2" version="$3" pkg="$4" ldflags="$5" check="$6"
  local cache="${ACTIVATION_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-activation}"
  local bin="$cache/$name/$version/$name"

  if [ -x "$bin" ] && "$check" "$bin"; then echo "$bin"; return 0; fi

  mkdir -p "$(dirname "$bin")"
  # One build at a time (parallel test runs); the one that waited finds the
  # binary built.
  exec 9>"$(dirname "$bin")/.lock"
  flock 9
  if [ -x "$bin" ] && "$check" "$bin"; then exec 9>&-; echo "$bin"; return 0; fi

  echo "building $name $version from $module into $bin" >&2
  local start=$SECONDS scratch dir
  scratch=$(mktemp -d)
  # go mod download -json reports a failure in the JSON on stdout only.
  if ! (cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$module@$version" >"$scratch/download.json"); then
    cat "$scratch/download.json" >&2 || true
  fi
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$scratch/download.json")
  rm -rf "$scratch"
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "error: could not download $module@$version through the Go module proxy (its answer above)" >&2
    return 1
  fi
  local tmp="$bin.tmp.$$"
  # shellcheck disable=SC2064 # the path is fixed now
  trap "rm -f '$tmp'" EXIT
  if ! (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"); then
    rm -f "$tmp"
    echo "error: building $name $version ($module, $pkg) failed (see the go output above)" >&2
    return 1
  fi
  if ! "$check" "$tmp"; then
    rm -f "$tmp"
    echo "error: the built $name does not run or does not report version $version" >&2
    return 1
  fi
  mv -f "$tmp" "$bin"
  exec 9>&-
  echo "built $name $version in $((SECONDS - start))s" >&2
  echo "$bin"
}
