#!/usr/bin/env sh
# Prints the -ldflags that stamp the pinned Kubernetes release into a binary built from
# this module, as a release build does (hack/lib/version.sh): --version and /version then
# report e.g. v1.35.8 instead of v0.0.0-master. Used by ../toolchain/build.sh and the
# Dockerfile, so the image and the local binaries carry the same stamp.
set -eu
cd "$(dirname "$0")"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
flags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  flags="$flags -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
echo "$flags"
