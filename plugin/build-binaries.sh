#!/usr/bin/env bash
# Builds the control-plane binaries and gpu-scheduler from this module's pinned
# dependencies into $1 (default ../.cache/bin). Go's build cache makes a second run
# a quick no-op; each binary reports its progress and time.
set -euo pipefail
cd "$(dirname "$0")"
out=$(realpath -m "${1:-../.cache/bin}")
mkdir -p "$out"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean"
done

build() { # name package
  local start=$SECONDS
  printf '  %-15s building...' "$1"
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$1" "$2"
  printf ' done (%ss)\n' $((SECONDS - start))
}

echo "Building Kubernetes $k8s_version binaries into $out"
echo "(a cold build takes about 10 minutes on 2 cores; later runs reuse Go's cache)"
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build gpu-scheduler ./cmd/gpu-scheduler
