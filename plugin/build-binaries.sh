#!/usr/bin/env bash
# Builds the control-plane binaries and gpu-scheduler from this module's pinned
# dependencies into $1 (default ../.cache/bin), static (CGO_ENABLED=0) and -trimpath:
#   kube-apiserver, kube-scheduler  k8s.io/kubernetes at the version in go.mod
#   gpu-scheduler                   ./cmd/gpu-scheduler (kube-scheduler + GPUScheduler)
#   etcd                            go.etcd.io/etcd/server/v3 at the version in etcd/go.mod
# Binaries are linked in $1/.build, where Go's own up-to-date check makes a run with
# nothing changed take seconds; a published binary whose bytes did not change is left
# alone, and a changed one is swapped in by rename, so a process running the old file
# is not disturbed. Each binary reports its build time and its --version (which also
# proves it runs).
set -euo pipefail
cd "$(dirname "$0")"
out=$(realpath -m "${1:-../.cache/bin}")
mkdir -p "$out"
stage="$out/.build"
mkdir -p "$stage"
export CGO_ENABLED=0

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go -C etcd list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
k8s_ldflags=$(./version-ldflags.sh)

build() { # name module-dir ldflags package
  local name=$1 dir=$2 ldflags=$3 pkg=$4 start=$SECONDS
  local state=updated
  printf '  %-15s building... ' "$name"
  go -C "$dir" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/$name" "$pkg"
  if cmp -s "$stage/$name" "$out/$name"; then
    state=unchanged
  else
    cp "$stage/$name" "$out/.$name.new"
    mv -f "$out/.$name.new" "$out/$name"
  fi
  printf '%-9s %3ss  %s\n' "$state" $((SECONDS - start)) "$("$out/$name" --version 2>&1 | head -n 1)"
}

echo "Building Kubernetes $k8s_version and etcd $etcd_version into $out"
echo "(cold on 2 cores: 7 to 11 minutes, kube-apiserver the longest; a rerun takes seconds)"
build etcd etcd "-s -w" go.etcd.io/etcd/server/v3
build kube-apiserver . "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler . "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-scheduler
build gpu-scheduler . "$k8s_ldflags" ./cmd/gpu-scheduler
