#!/usr/bin/env bash
# Builds the stack's two container images on this machine, from their unmodified Dockerfiles
# (make images; docs/images.md):
#   scheduler-extender  extender_app/Dockerfile, context: the repository root
#   gpu-scheduler       plugin/Dockerfile, context: plugin/
# with the context, platform and ignore file that render/image_sources.py declares.
#
# The public base images cannot be pulled here, so each `FROM` reference of a Dockerfile
# (tag and digest as written) is answered by a local base image through a buildah named
# build context (--build-context '<FROM reference>=container-image://<local base>'):
#   python:3.11-slim-*                 python-builder  Debian's python3, pip, the host's CA
#   gcr.io/distroless/python3-*        python-runtime  Debian's python3, user nonroot 65532
#   golang:*                           go-builder      the machine's Go toolchain
#   gcr.io/distroless/static-*         static          passwd, group, CA bundle; no files else
# The bases are made once (mmdebstrap, Debian bookworm, like the -debian12 pins) and kept
# with the built images in a container storage under $1 (default .cache/images). A rerun
# reuses both and takes seconds.
#
# Also installs, once, what it needs from Debian (as root): buildah, podman, mmdebstrap,
# docker-registry (the push-path test's registry) and runc.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(realpath -m "${1:-.cache/images}")
python=${PYTHON_FOR_TAGS:-.venv/bin/python}
platform=linux/amd64          # render/image_sources.py IMAGE_PLATFORM
suite=bookworm                # the distroless pins are -debian12 images
# A base's revision: bump it when its recipe in make_base changes, and it is made again.
declare -A base_revision=([python-builder]=1 [python-runtime]=1 [go-builder]=1 [static]=2)
# runc, not crun: crun refuses this machine's hybrid cgroup hierarchy.
packages=(buildah podman mmdebstrap docker-registry runc)

step() { printf '%s\n' "$*"; }
elapsed() { printf '%3ss' $((SECONDS - $1)); }

install_packages() {
  local missing=() pkg
  for pkg in "${packages[@]}"; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    step "  packages        installed (${packages[*]})"
    return
  fi
  [ "$(id -u)" -eq 0 ] || { echo "make images must install ${missing[*]} with apt-get: run it as root" >&2; exit 1; }
  local start=$SECONDS
  step "  packages        installing ${missing[*]} with apt-get..."
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  step "  packages        installed in $(elapsed "$start")"
}

write_container_config() {
  # One storage for the bases, the builds and the tests' containers: the kernel's overlay
  # driver (a container starts in seconds; vfs copies the whole image first), cgroupfs and a
  # file event log; the ulimits fit under this sandbox's hard limits (podman's defaults do not).
  # podman refuses a run root longer than 50 characters: a short one per store, under /tmp.
  local runroot
  runroot=/tmp/gse-images-$(printf '%s' "$cache" | sha256sum | cut -c1-12)
  mkdir -p "$cache/storage" "$runroot"
  cat >"$cache/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$runroot"
EOF
  cat >"$cache/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
}

export CONTAINERS_STORAGE_CONF="$cache/storage.conf" CONTAINERS_CONF="$cache/containers.conf"
export BUILDAH_ISOLATION=chroot

debian_base() { # name, then mmdebstrap options; the root file system is imported as the image
  local name=$1 start=$SECONDS
  shift
  mmdebstrap --quiet --variant=minbase --format=tar \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='mkdir -p "$1/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/"' \
    "$@" "$suite" - "deb http://deb.debian.org/debian $suite main" \
    "deb http://deb.debian.org/debian-security $suite-security main" \
    | podman import --quiet "${changes[@]}" - "$name" >/dev/null
  step "  $(printf '%-15s' "$kind") made in $(elapsed "$start")"
}

nonroot_hook='chroot "$1" groupadd -g 65532 nonroot && chroot "$1" useradd -K UID_MAX=65532 -u 65532 -g 65532 -d /home/nonroot -m -s /sbin/nologin nonroot'

make_base() { # kind image
  local kind=$1 image=$2 changes
  if podman image exists "$image"; then
    step "  $(printf '%-15s' "$kind") cached ($image)"
    return
  fi
  case $kind in
  python-builder)
    # python:3.11-slim: python and pip that install anywhere (no EXTERNALLY-MANAGED marker).
    changes=(--change 'ENV=LANG=C.UTF-8' --change 'CMD=["python3"]')
    debian_base "$image" --include=python3,python3-pip,python-is-python3 \
      --customize-hook='rm -f "$1"/usr/lib/python3.*/EXTERNALLY-MANAGED'
    ;;
  python-runtime)
    # distroless python3-debian12:nonroot: Debian's python3, running as nonroot (65532).
    changes=(--change 'ENV=LANG=C.UTF-8' --change 'ENV=SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'
      --change 'USER=65532' --change 'WORKDIR=/home/nonroot' --change 'ENTRYPOINT=["/usr/bin/python3"]')
    debian_base "$image" --include=python3 --customize-hook="$nonroot_hook"
    ;;
  go-builder)
    # golang:<version>-bookworm: the machine's Go toolchain (the same version the Dockerfile
    # names), GOPATH /go, and the module proxy settings of this environment.
    local goroot go_version
    goroot=$(go env GOROOT)
    go_version=$(go env GOVERSION)
    changes=(--change "ENV=GOLANG_VERSION=${go_version#go}" --change 'ENV=GOPATH=/go'
      --change 'ENV=GOTOOLCHAIN=local' --change "ENV=GOPROXY=$(go env GOPROXY)"
      --change "ENV=GONOSUMDB=$(go env GONOSUMDB)" --change "ENV=GOPRIVATE=$(go env GOPRIVATE)"
      --change 'ENV=PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
      --change 'WORKDIR=/go')
    debian_base "$image" --customize-hook="cp -a '$goroot' \"\$1/usr/local/go\" && mkdir -p \"\$1/go/bin\""
    ;;
  static)
    # distroless static-debian12:nonroot: no shell, no package manager; passwd, group, the
    # CA bundle and a writable /tmp.
    local start=$SECONDS tree
    tree=$(mktemp -d)
    mkdir -p "$tree/etc/ssl/certs" "$tree/tmp" "$tree/home/nonroot"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$tree/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$tree/etc/group"
    cp /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/certs/"
    chmod 755 "$tree" && chmod 1777 "$tree/tmp" && chown 65532:65532 "$tree/home/nonroot"
    tar -C "$tree" --numeric-owner -cf - . | podman import --quiet \
      --change 'ENV=PATH=/usr/local/bin:/usr/bin:/bin' --change 'ENV=SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
      --change 'USER=65532' --change 'WORKDIR=/home/nonroot' - "$image" >/dev/null
    rm -rf "$tree"
    step "  $(printf '%-15s' "$kind") made in $(elapsed "$start")"
    ;;
  esac
}

base_for() { # a Dockerfile's FROM reference -> the local base kind that answers it
  case $1 in
  python:3.11-slim*) echo python-builder ;;
  gcr.io/distroless/python3-*) echo python-runtime ;;
  golang:*) echo go-builder ;;
  gcr.io/distroless/static-*) echo static ;;
  *) echo "no local base answers FROM $1: add it to base_for in images/build.sh" >&2; return 1 ;;
  esac
}

base_image() { # kind -> local image name; the Go builder is per Go version
  case $1 in
  go-builder) echo "localhost/gse-base/go-builder:r${base_revision[go-builder]}-$(go env GOVERSION)" ;;
  *) echo "localhost/gse-base/$1:r${base_revision[$1]}" ;;
  esac
}

make_bases() { # every base the Dockerfiles' FROM lines name; the missing ones made side by side
  local dockerfile ref kind pid failed=0 pids=()
  local -A seen=()
  for dockerfile in "$@"; do
    for ref in $(awk 'toupper($1) == "FROM" { print $2 }' "$dockerfile"); do
      kind=$(base_for "$ref")
      [ -z "${seen[$kind]:-}" ] || continue
      seen[$kind]=1
      make_base "$kind" "$(base_image "$kind")" &
      pids+=($!)
    done
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [ $failed -eq 0 ] || { echo "a base image could not be made (its output is above)" >&2; exit 1; }
}

build_image() { # repository dockerfile context ignorefile [buildah options]
  local repository=$1 dockerfile=$2 context=$3 ignorefile=$4 start=$SECONDS ref kind tag
  shift 4
  local contexts=() bases=()
  for ref in $(awk 'toupper($1) == "FROM" { print $2 }' "$dockerfile"); do
    kind=$(base_for "$ref")
    contexts+=(--build-context "$ref=container-image://$(base_image "$kind")")
    bases+=("$(podman image inspect --format '{{.Id}}' "$(base_image "$kind")")")
  done
  tag=$("$python" -c "import sys; from render.image_sources import image_tag, EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE as G; print(image_tag({s.repository: s for s in (EXTENDER_IMAGE, G)}[sys.argv[1]]))" "$repository")
  # The content tag covers the sources, the Dockerfile and the platform; the stamp adds the
  # bases. Both unchanged and the image present: nothing to do, not even buildah's own layer
  # check (which starts a working container from every stage's base).
  local stamp="$cache/$repository.built" want="$tag ${bases[*]}"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && podman image exists "localhost/$repository:$tag"; then
    step "  $(printf '%-15s' "$repository") unchanged: $(summary "localhost/$repository:$tag")"
    return
  fi
  step "  $(printf '%-15s' "$repository") building $dockerfile (context $context, tag $tag)..."
  buildah bud --quiet --layers --network host --platform "$platform" --file "$dockerfile" \
    --ignorefile "$ignorefile" "${contexts[@]}" "$@" \
    --tag "localhost/$repository:$tag" --tag "localhost/$repository:latest" "$context" >"$cache/$repository.build.log" 2>&1 \
    || { tail -n 40 "$cache/$repository.build.log"; echo "buildah bud failed: $cache/$repository.build.log" >&2; exit 1; }
  echo "$want" >"$stamp"
  step "  $(printf '%-15s' "$repository") built in $(elapsed "$start"): $(summary "localhost/$repository:$tag")"
}

summary() { # image -> "id, size"
  podman image inspect --format '{{.Id}} {{.Size}}' "$1" | awk '{ printf "%s, %.1f MB", substr($1, 1, 12), $2 / 1e6 }'
}

echo "Building the container images into $cache (cold: a few minutes, most of it making the"
echo "four bases side by side; a rerun takes seconds)"
install_packages
write_container_config
make_bases extender_app/Dockerfile plugin/Dockerfile
build_image scheduler-extender extender_app/Dockerfile . extender_app/Dockerfile.dockerignore
# The Go builds share this machine's module and build caches (bind-mounted into the build's
# RUN steps, outside the image): the compile is Go's own up-to-date check, not a cold build.
build_image gpu-scheduler plugin/Dockerfile plugin plugin/.dockerignore \
  --volume "$(go env GOMODCACHE):/go/pkg/mod" --volume "$(go env GOCACHE):/root/.cache/go-build"
