#!/usr/bin/env bash
# Builds the stack's two images and pushes them, tagged with the release, to a registry you name
# (make push-images; docs/images.md#pushing-the-images-to-your-registry):
#   <registry>/scheduler-extender:<tag>   extender_app/Dockerfile, context: the repository root
#   <registry>/gpu-scheduler:<tag>        plugin/Dockerfile, context: plugin/
# Each is pushed as an image index (manifest list) with one image per platform, so one tag serves
# amd64 and arm64 nodes alike. Prints the digest-pinned reference of each, for images.extender and
# images.gpuScheduler.
#
# Usage: images/push.sh REGISTRY [TAG]
#   REGISTRY    host[:port][/namespace], e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com/gpu
#   TAG         default: the release, contracts/release.py VERSION
# Environment:
#   PLATFORMS   comma-separated, default linux/amd64 (e.g. linux/amd64,linux/arm64)
#   BASES       public (default): the Dockerfiles' pinned public base images, pulled by buildah;
#               local: the images `make images` builds on local Debian bases (linux/amd64 only),
#               for machines without access to the public registries
#   TLS_VERIFY  true (default); false only for a plain-HTTP registry such as a local test one
# Log in first (buildah login; for ECR: aws ecr get-login-password --region <region> |
# buildah login --username AWS --password-stdin <account>.dkr.ecr.<region>.amazonaws.com).
set -euo pipefail
cd "$(dirname "$0")/.."
registry=${1:-}
tag=${2:-}
platforms=${PLATFORMS:-linux/amd64}
bases=${BASES:-public}
tls_verify=${TLS_VERIFY:-true}
python=${PYTHON_FOR_TAGS:-.venv/bin/python}
cache=$(realpath -m "${IMAGE_CACHE:-.cache/images}")
repositories=(scheduler-extender gpu-scheduler)

fail() { echo "push-images: $*" >&2; exit 1; }

[ -n "$registry" ] || fail "name the registry: make push-images REGISTRY=<host>[/namespace] (docs/images.md)"
registry=${registry%/}
[ -n "$tag" ] || tag=$("$python" -c 'from contracts.release import VERSION; print(VERSION)')
case $tls_verify in true | false) ;; *) fail "TLS_VERIFY is true or false, not '$tls_verify'" ;; esac

host_arch() { case $(uname -m) in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }
qemu_name() { case $1 in amd64) echo x86_64 ;; arm64) echo aarch64 ;; *) echo "$1" ;; esac; }

check_platforms() { # every platform linux/<arch>; a foreign arch needs qemu registered with binfmt_misc
  local platform arch
  IFS=, read -r -a wanted <<<"$platforms"
  for platform in "${wanted[@]}"; do
    case $platform in linux/amd64 | linux/arm64) ;; *) fail "PLATFORMS takes linux/amd64 and linux/arm64, not '$platform'" ;; esac
    arch=${platform#linux/}
    [ "$arch" = "$(host_arch)" ] && continue
    [ "$bases" = public ] || fail "BASES=local builds on this machine's own bases, $(host_arch) only; build $platform with BASES=public"
    [ -e "/proc/sys/fs/binfmt_misc/qemu-$(qemu_name "$arch")" ] \
      || fail "$platform on a $(host_arch) host runs the build's RUN steps under qemu: install qemu-user-static (Debian registers it with binfmt_misc), or build it on a $platform host (docs/images.md#arm64-nodes)"
  done
}

build_public() { # repository dockerfile context ignorefile list: every platform into the list
  local repository=$1 dockerfile=$2 context=$3 ignorefile=$4 list=$5
  echo "  $(printf '%-18s' "$repository") building $dockerfile for $platforms (public bases)..."
  buildah bud --quiet --layers --platform "$platforms" --manifest "$list" --file "$dockerfile" \
    --ignorefile "$ignorefile" "$context" >/dev/null
}

add_local() { # repository list: the image `make images` built for the current sources
  local repository=$1 list=$2 built
  built=$("$python" -c "import sys; from render.image_sources import image_tag, EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE as G; print(image_tag({s.repository: s for s in (EXTENDER_IMAGE, G)}[sys.argv[1]]))" "$repository")
  buildah manifest add "$list" "containers-storage:localhost/$repository:$built" >/dev/null
  echo "  $(printf '%-18s' "$repository") localhost/$repository:$built (local bases, linux/$(host_arch))"
}

push() { # repository dockerfile context ignorefile
  local repository=$1 list="localhost/gse-push/$1:$tag" target="$registry/$1:$tag" digest
  buildah manifest rm "$list" >/dev/null 2>&1 || true
  buildah manifest create "$list" >/dev/null
  if [ "$bases" = local ]; then add_local "$repository" "$list"; else build_public "$@" "$list"; fi
  digest=$(mktemp)
  buildah manifest push --quiet --all --tls-verify="$tls_verify" --digestfile "$digest" \
    "$list" "docker://$target"
  echo "  $(printf '%-18s' "$repository") pushed $target@$(cat "$digest")"
  rm -f "$digest"
  buildah manifest rm "$list" >/dev/null
}

check_platforms
case $bases in
public) ;;
local)
  # The images `make images` keeps in its store (built now if the sources changed; seconds if not).
  images/build.sh "$cache"
  export CONTAINERS_STORAGE_CONF="$cache/storage.conf" CONTAINERS_CONF="$cache/containers.conf"
  ;;
*) fail "BASES is public or local, not '$bases'" ;;
esac
echo "Pushing ${repositories[*]} to $registry with tag $tag"
push scheduler-extender extender_app/Dockerfile . extender_app/Dockerfile.dockerignore
push gpu-scheduler plugin/Dockerfile plugin plugin/.dockerignore
