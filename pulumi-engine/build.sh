#!/usr/bin/env bash
# Builds the Pulumi engine from the Go module proxy into $1 (default ../.cache/pulumi),
# static (CGO_ENABLED=0) and -trimpath, as the upstream release builds do:
#   bin/pulumi                            the CLI, github.com/pulumi/pulumi/pkg/v3 (cli/go.mod)
#   providers/pulumi-resource-kubernetes  github.com/pulumi/pulumi-kubernetes/provider/v4
#                                         (kubernetes/go.mod)
# and installs the provider into the plugin cache of the PULUMI_HOME $1/home under its own
# version, so the engine finds it there and downloads nothing. The providers are kept out
# of bin/ on purpose: the Automation API puts the CLI's directory on PATH, and a provider on
# PATH is used whatever version a program asks for.
# Binaries are linked in $1/.build, where Go's own up-to-date check makes a run with
# nothing changed take seconds; a published binary whose bytes did not change is left
# alone, and a changed one is swapped in by rename. Each binary reports its build time and
# the version it carries. environment.md says how to run the engine.
set -euo pipefail
cd "$(dirname "$0")"
root=$(realpath -m "${1:-../.cache/pulumi}")
stage="$root/.build"
mkdir -p "$root/bin" "$root/providers" "$root/home" "$stage"
export CGO_ENABLED=0
export PULUMI_HOME="$root/home" PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

cli_version=$(go -C cli list -m -f '{{.Version}}' github.com/pulumi/pulumi/pkg/v3)
# The provider module is served only as the pseudo-version of the commit tagged v4.25.0;
# its release number is the one of the sdk/v4 module pinned beside it (upstream builds the
# provider against ../sdk, the same commit).
kubernetes_version=$(go -C kubernetes list -m -f '{{.Version}}' github.com/pulumi/pulumi-kubernetes/sdk/v4)
kubernetes_version=${kubernetes_version#v}

publish() { # name dir: copy $stage/name to dir/name unless the bytes are the same
  if cmp -s "$stage/$1" "$2/$1"; then
    echo unchanged
  else
    cp "$stage/$1" "$2/.$1.new"
    mv -f "$2/.$1.new" "$2/$1"
    echo updated
  fi
}

build_cli() {
  local start=$SECONDS state
  printf '  %-27s building... ' pulumi
  # Tags and -X as in upstream's .goreleaser.yml (osusergo, grpcnotrace; version.Version).
  go -C cli build -trimpath -buildvcs=false -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$cli_version" \
    -o "$stage/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  state=$(publish pulumi "$root/bin")
  printf '%-9s %4ss  pulumi version: %s\n' "$state" $((SECONDS - start)) "$("$root/bin/pulumi" version)"
}

build_kubernetes() {
  local start=$SECONDS state src work="$stage/kubernetes"
  printf '  %-27s building... ' pulumi-resource-kubernetes
  # The command embeds schema-embed.json and terraform-mapping-embed.json, which upstream's
  # Makefile makes with the command's own generate.go (the schema stamped with the
  # version); they are not in the module. So the command is built in a copy of this
  # wrapper module that also holds upstream's command directory and those two files.
  go -C kubernetes mod download github.com/pulumi/pulumi-kubernetes/provider/v4 # .Dir is empty until then
  src=$(go -C kubernetes list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)/cmd/pulumi-resource-kubernetes
  mkdir -p "$work/cmd"
  cp kubernetes/go.mod kubernetes/go.sum "$work/"
  if ! cmp -s "$src/schema.json" "$work/cmd/schema.json" || ! cmp -s "$src/main.go" "$work/cmd/main.go" \
    || [ "$(cat "$work/cmd/.version" 2>/dev/null)" != "$kubernetes_version" ]; then
    rm -rf "$work/cmd" && mkdir -p "$work/cmd"
    cp "$src"/{main.go,generate.go,schema.json,terraform-mapping.json} "$work/cmd/"
    chmod u+w "$work"/cmd/*
    (cd "$work/cmd" && VERSION=$kubernetes_version go run generate.go)
    echo "$kubernetes_version" >"$work/cmd/.version"
  fi
  # -X as in upstream's Makefile (provider/pkg/version.Version).
  go -C "$work" build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$kubernetes_version" \
    -o "$stage/pulumi-resource-kubernetes" ./cmd
  state=$(publish pulumi-resource-kubernetes "$root/providers")
  install_plugin kubernetes "$kubernetes_version" "$root/providers/pulumi-resource-kubernetes"
  printf '%-9s %4ss  schema version: %s\n' "$state" $((SECONDS - start)) \
    "$(provider_version "$root/providers/pulumi-resource-kubernetes")"
}

provider_version() { # binary: the version in the schema the running provider serves
  "$root/bin/pulumi" package get-schema "$1" | sed -n 's/^  "version": "\(.*\)",$/\1/p'
}

install_plugin() { # name version binary: into $PULUMI_HOME/plugins unless already there
  local dir="$PULUMI_HOME/plugins/resource-$1-v$2"
  local log
  cmp -s "$3" "$dir/pulumi-resource-$1" && return
  log=$("$root/bin/pulumi" plugin install resource "$1" "$2" --file "$3" --reinstall 2>&1) \
    || { echo "$log" >&2; return 1; }
}

echo "Building the Pulumi engine $cli_version and pulumi-resource-kubernetes $kubernetes_version into $root"
echo "(cold on 2 cores: 25-45 minutes in all, by load: the CLI 8-17, the provider 17-25; a rerun takes seconds)"
build_cli
build_kubernetes
echo "Installed plugins ($PULUMI_HOME):"
"$root/bin/pulumi" plugin ls
