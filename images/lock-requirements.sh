#!/usr/bin/env bash
# Writes extender_app/requirements.lock: extender_app/requirements.txt with the SHA-256 of each
# wheel the extender image (linux/amd64, CPython 3.11, Debian bookworm's glibc) installs. The
# image's pip runs with --require-hashes, so a file other than the one hashed here is refused.
# Run after changing a version in extender_app/requirements.txt (needs PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
pip=${PIP:-.venv/bin/pip}
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
platforms=()
for tag in manylinux_2_36 manylinux_2_28 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1 linux; do
  platforms+=(--platform "${tag}_x86_64")
done
"$pip" download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
  "${platforms[@]}" --platform any --dest "$wheels" -r extender_app/requirements.txt
{
  echo '# extender_app/requirements.txt with the SHA-256 of each wheel the linux/amd64 image installs:'
  echo '# pip --require-hashes refuses any other file, and any package not listed here. Regenerate after'
  echo '# a version change: CONTRIBUTING.md, "Regenerating what is generated".'
  sed 's/#.*//; s/[[:space:]]*$//; /^$/d' extender_app/requirements.txt | while read -r requirement; do
    name=${requirement%%==*}
    version=${requirement#*==}
    pattern=$(printf '%s' "$name" | tr 'A-Z-' 'a-z_')
    wheel=$(find "$wheels" -maxdepth 1 -iname "${pattern}-${version}-*.whl" | head -n 1)
    [ -n "$wheel" ] || { echo "no wheel for $requirement" >&2; exit 1; }
    printf '%s \\\n    --hash=sha256:%s\n' "$requirement" "$(sha256sum "$wheel" | cut -d' ' -f1)"
  done
} >extender_app/requirements.lock
echo "wrote extender_app/requirements.lock" >&2
