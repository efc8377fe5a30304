#!/usr/bin/env bash
# Generates the provider's docs (docs/index.md, docs/data-sources/*.md,
# docs/functions/*.md) with
# tfplugindocs, offline: the schema comes from `tofu providers schema -json`
# run against the freshly built provider through dev_overrides, so neither
# Terraform nor any registry is needed.
#
#   tools/docs.sh          regenerate docs/index.md, docs/data-sources/ and
#                          docs/functions/
#   tools/docs.sh check    fail (exit 1) when those files are not what the
#                          current schema and examples give
#
# Only docs/index.md, docs/data-sources/ and docs/functions/ are written or
# compared; every other file under docs/ (docs/nomad/, docs/benchmarks.md...)
# belongs to someone else and is left alone.
set -euo pipefail
mode="${1:-generate}"
case "$mode" in
  generate|check) ;;
  *) echo "usage: $0 [generate|check]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tofu="$("$root/tools/build-tofu.sh")"

work="$(mktemp -d "${TMPDIR:-/tmp}/activation-docs.XXXXXX")"
trap 'rm -rf "$work"' EXIT

. "$root/tools/dev-provider.sh"
dev_provider "$work"
# tfplugindocs at the version pinned in tools/go.mod.
(cd "$root/tools" && go build -o "$work/tfplugindocs" github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs)
mkdir -p "$work/schema"
cat >"$work/schema/main.tf" <<'TF'
terraform {
  required_providers {
    activation = {
      source = "activation-scheduler/activation"
    }
  }
}
TF
(
  cd "$work/schema"
  TF_CLI_CONFIG_FILE="$work/tofu.tfrc" TF_DATA_DIR="$work/schema/.terraform" CHECKPOINT_DISABLE=1 \
    "$tofu" providers schema -json >"$work/schema.raw.json" 2>"$work/schema.err" ||
    { cat "$work/schema.err" >&2; echo "error: tofu providers schema failed" >&2; exit 1; }
)
# tfplugindocs matches a schema only under the bare provider name.
sed 's#"registry\.opentofu\.org/activation-scheduler/activation"#"activation"#' "$work/schema.raw.json" >"$work/schema.json"
grep -q '"activation":' "$work/schema.json" || { echo "error: no activation provider in the schema" >&2; exit 1; }
grep -q '"container_counts":' "$work/schema.json" || { echo "error: no container_counts function in the schema (OpenTofu too old?)" >&2; exit 1; }

# Generate in a scratch provider directory, so tfplugindocs' clean-up of its
# output directory never touches the others' files under docs/.
mkdir -p "$work/provider"
cp -R "$root/examples" "$work/provider/examples"
"$work/tfplugindocs" generate \
  --provider-dir "$work/provider" \
  --provider-name activation \
  --rendered-provider-name "Activation" \
  --providers-schema "$work/schema.json" >"$work/tfplugindocs.log" 2>&1 ||
  { cat "$work/tfplugindocs.log" >&2; echo "error: tfplugindocs failed" >&2; exit 1; }

out="$work/provider/docs"
generated="data-sources functions"
if [ "$mode" = check ]; then
  status=0
  diff -u "$root/docs/index.md" "$out/index.md" || status=1
  for d in $generated; do
    diff -ru "$root/docs/$d" "$out/$d" || status=1
  done
  if [ "$status" != 0 ]; then
    echo "docs/ is stale: run tools/docs.sh to regenerate docs/index.md, docs/data-sources/ and docs/functions/" >&2
    exit 1
  fi
  echo "docs/index.md, docs/data-sources/ and docs/functions/ match the schema and examples"
  exit 0
fi
mkdir -p "$root/docs"
cp "$out/index.md" "$root/docs/index.md"
for d in $generated; do
  rm -rf "${root:?}/docs/$d"
  cp -R "$out/$d" "$root/docs/$d"
done
echo "wrote docs/index.md, docs/data-sources/ ($(ls "$root/docs/data-sources" | wc -l) pages) and docs/functions/ ($(ls "$root/docs/functions" | wc -l) pages)"
