#!/usr/bin/env bash
# Builds one set of binaries from pinned Go modules into $1 (default ../.cache/bin),
# static (CGO_ENABLED=0) and -trimpath. $2 names the set (default control-plane):
#   control-plane (make binaries):
#     kube-apiserver, kube-scheduler, kube-controller-manager
#                                     k8s.io/kubernetes at the version in ../plugin/go.mod:
#                                     built in the plugin's module, so the vanilla scheduler,
#                                     the API server, the Job controller and gpu-scheduler
#                                     are one Kubernetes
#     gpu-scheduler                   ../plugin/cmd/gpu-scheduler (kube-scheduler + GPUScheduler)
#     etcd                            go.etcd.io/etcd/server/v3 at the version in etcd/go.mod
#   autoscalers (make autoscaler-binaries):
#     karpenter-kwok  sigs.k8s.io/karpenter/kwok (Karpenter with its kwok cloud provider)
#                     at the version in karpenter/go.mod; upstream names it kwok too
#     kwok            sigs.k8s.io/kwok/cmd/kwok (fakes the kubelet of Karpenter's nodes)
#                     at the version in kwok/go.mod
#     karpenter-crds/ Karpenter's CRDs from its module (kwok/charts/crds, kwok/apis/crds)
#     karpenter-aws-crds/  the AWS provider's CRDs (EC2NodeClass, NodePool, ...) from
#                     github.com/aws/karpenter-provider-aws at the release the stack's
#                     Karpenter chart pins (components/stack_config/charts.py), downloaded only:
#                     the dry run of the stack's NodePools and EC2NodeClass installs them
#     kwok-stages/    kwok's node and pod Stages from its module (kustomize/stage/)
#   charts (make charts):
#     helm            helm.sh/helm/v4/cmd/helm at the version in helm/go.mod (renders the
#                     stack's charts with its values: helm template, never an install)
#     charts/karpenter/, charts/karpenter-crd/  the AWS provider's charts from
#                     github.com/aws/karpenter-provider-aws
#     charts/nvidia-device-plugin/  NVIDIA's chart from github.com/NVIDIA/k8s-device-plugin
#     charts/<chart>.source  the module@version and folder each was copied from
#     The chart sources are only downloaded (go mod download), at the module and version
#     components/stack_config/charts.py names (the stack's own pins, read from there).
#   otelcol (make otelcol):
#     otelcol-emf     an OpenTelemetry Collector with the Prometheus receiver, the batch
#                     processor and the awsemf exporter (otelcol/main.go), at the versions in
#                     otelcol/go.mod: the local proof of the CloudWatch pipeline
#                     (docs/observability.md) scrapes the services with it and writes EMF
# Binaries are linked in $1/.build, where Go's own up-to-date check makes a run with
# nothing changed take seconds; a published binary whose bytes did not change is left
# alone, and a changed one is swapped in by rename, so a process running the old file
# is not disturbed. Each binary reports its build time and its --version (which also
# proves it runs).
set -euo pipefail
cd "$(dirname "$0")"
plugin=../plugin
out=$(realpath -m "${1:-../.cache/bin}")
set_name=${2:-control-plane}
mkdir -p "$out"
stage="$out/.build"
mkdir -p "$stage"
export CGO_ENABLED=0
KARPENTER_AWS_MODULE=$(python3 ../components/stack_config/charts.py karpenter | cut -d' ' -f1)

build() { # name module-dir ldflags package [flag that prints a first line and exits]
  local name=$1 dir=$2 ldflags=$3 pkg=$4 probe=${5:---version} start=$SECONDS
  local state=updated
  printf '  %-23s building... ' "$name"
  go -C "$dir" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/$name" "$pkg"
  if cmp -s "$stage/$name" "$out/$name"; then
    state=unchanged
  else
    cp "$stage/$name" "$out/.$name.new"
    mv -f "$out/.$name.new" "$out/$name"
  fi
  printf '%-9s %3ss  %s\n' "$state" $((SECONDS - start)) "$("$out/$name" "$probe" 2>&1 | head -n 1)"
}

module_dir() { # module@version: download it into the module cache, print its directory
  local json dir
  json=$(go mod download -json "$1" || true)
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
  if [ -z "$dir" ]; then
    echo "could not download $1: $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' <<<"$json")" >&2
    exit 1
  fi
  printf '%s\n' "$dir"
}

publish_tree() { # name directory: copy a directory tree to $out/name, replacing it only on a change
  local name=$1 new="$stage/$1"
  rm -rf "$new" && mkdir -p "$(dirname "$new")"
  cp -r "$2" "$new" && chmod -R u+w "$new"
  if diff -r -q "$new" "$out/$name" >/dev/null 2>&1; then
    printf '  %-23s unchanged %d files\n' "$name/" "$(find "$new" -type f | wc -l)"
  else
    mkdir -p "$(dirname "$out/$name")"
    rm -rf "$out/$name.old" && { [ ! -e "$out/$name" ] || mv "$out/$name" "$out/$name.old"; }
    cp -r "$new" "$out/$name" && rm -rf "$out/$name.old"
    printf '  %-23s updated   %d files\n' "$name/" "$(find "$new" -type f | wc -l)"
  fi
}

publish_text() { # name text: write text (and a newline) to $out/name, replacing it only on a change
  if [ "$(cat "$out/$1" 2>/dev/null)" != "$2" ]; then
    printf '%s\n' "$2" >"$out/$1.new" && mv -f "$out/$1.new" "$out/$1"
  fi
}

publish_files() { # directory files...: copy into $out/directory, replacing it only on a change
  local name=$1 new="$stage/$1"
  shift
  rm -rf "$new" && mkdir -p "$new"
  cp "$@" "$new/" && chmod -R u+w "$new"
  if diff -r -q "$new" "$out/$name" >/dev/null 2>&1; then
    printf '  %-23s unchanged %d files\n' "$name/" $#
  else
    rm -rf "$out/.$name.old" && { [ ! -e "$out/$name" ] || mv "$out/$name" "$out/.$name.old"; }
    cp -r "$new" "$out/$name" && rm -rf "$out/.$name.old"
    printf '  %-23s updated   %d files\n' "$name/" $#
  fi
}

case $set_name in
control-plane)
  k8s_version=$(go -C "$plugin" list -m -f '{{.Version}}' k8s.io/kubernetes)
  etcd_version=$(go -C etcd list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  k8s_ldflags=$("$plugin"/version-ldflags.sh)
  echo "Building Kubernetes $k8s_version and etcd $etcd_version into $out"
  echo "(cold on 2 cores: 7 to 11 minutes, kube-apiserver the longest; a rerun takes seconds)"
  build etcd etcd "-s -w" go.etcd.io/etcd/server/v3
  build kube-apiserver "$plugin" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-apiserver
  build kube-scheduler "$plugin" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-scheduler
  build gpu-scheduler "$plugin" "$k8s_ldflags" ./cmd/gpu-scheduler
  build kube-controller-manager "$plugin" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-controller-manager
  ;;
autoscalers)
  karpenter_version=$(go -C karpenter list -m -f '{{.Version}}' sigs.k8s.io/karpenter)
  kwok_version=$(go -C kwok list -m -f '{{.Version}}' sigs.k8s.io/kwok)
  echo "Building Karpenter $karpenter_version (kwok provider) and kwok $kwok_version into $out"
  echo "(cold on 2 cores, module downloads included: about 5 minutes; a rerun takes seconds)"
  # Karpenter has no --version: the version is stamped where its operator reads it, and
  # --help (parsed before it looks for a cluster) proves the binary runs.
  build karpenter-kwok karpenter "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=$karpenter_version" \
    sigs.k8s.io/karpenter/kwok --help
  build kwok kwok "-s -w" sigs.k8s.io/kwok/cmd/kwok
  karpenter_dir=$(go -C karpenter list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
  kwok_stage_dir=$(go -C kwok list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
  publish_files karpenter-crds "$karpenter_dir"/kwok/charts/crds/*.yaml "$karpenter_dir"/kwok/apis/crds/*.yaml
  karpenter_aws_dir=$(module_dir "$KARPENTER_AWS_MODULE")
  publish_files karpenter-aws-crds "$karpenter_aws_dir"/pkg/apis/crds/*.yaml
  # The Stages of kwok's own "fast" set (node/fast, pod/fast) plus the plain node heartbeat.
  publish_files kwok-stages "$kwok_stage_dir"/node/fast/node-initialize.yaml \
    "$kwok_stage_dir"/node/heartbeat/node-heartbeat.yaml "$kwok_stage_dir"/pod/fast/pod-*.yaml
  ;;
charts)
  helm_version=$(go -C helm list -m -f '{{.Version}}' helm.sh/helm/v4)
  echo "Building helm $helm_version and fetching the stack's chart sources into $out"
  echo "(cold on 2 cores: about 4 minutes, nearly all of it helm; a rerun takes seconds)"
  build helm helm "-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.metadata=" \
    helm.sh/helm/v4/cmd/helm version
  for chart in karpenter karpenter-crd nvidia-device-plugin; do
    read -r module path < <(python3 ../components/stack_config/charts.py "$chart")
    dir=$(module_dir "$module")
    publish_tree "charts/$chart" "$dir/$path"
    publish_text "charts/$chart.source" "$module $path"
  done
  ;;
otelcol)
  otelcol_version=$(go -C otelcol list -m -f '{{.Version}}' go.opentelemetry.io/collector/otelcol)
  echo "Building the OpenTelemetry Collector $otelcol_version (Prometheus receiver, awsemf exporter) into $out"
  echo "(cold on 2 cores: about 10 minutes, plus about 3 to download the modules; a rerun takes seconds)"
  build otelcol-emf otelcol "-s -w -X main.version=$otelcol_version" . --version
  ;;
*)
  echo "unknown set '$set_name': control-plane, autoscalers, charts or otelcol" >&2
  exit 2
  ;;
esac
