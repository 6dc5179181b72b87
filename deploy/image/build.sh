#!/usr/bin/env bash
# Builds GPU Steward's container image with buildah from deploy/image/Containerfile (`./dev image`).
#
#   IMAGE           the tag (default localhost/gpusteward:<version>)
#   IMAGE_BASE      a Debian 12 image to build FROM, e.g. docker.io/library/debian:bookworm-slim; without
#                   it a bookworm made with debootstrap is imported once as localhost/gpusteward-base:bookworm
#   DEBIAN_MIRROR   where debootstrap fetches from (default http://deb.debian.org/debian)
#   BUILDAH_ISOLATION  how RUN steps run (default chroot: needs no OCI runtime or cgroup setup)
#   IMAGE_WORK      scratch folder (default build/image)
# CONTAINERS_STORAGE_CONF, as buildah and podman read it, chooses where images are stored.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-.venv}
WORK=${IMAGE_WORK:-build/image}
version=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("gpusteward"))')
IMAGE=${IMAGE:-localhost/gpusteward:$version}
mkdir -p "$WORK"

base=${IMAGE_BASE:-localhost/gpusteward-base:bookworm}
if [ -z "${IMAGE_BASE:-}" ] && ! podman image exists "$base"; then
  echo "base: debootstrap bookworm (minbase) -> $base"
  rm -rf "$WORK/rootfs"
  if ! debootstrap --variant=minbase bookworm "$WORK/rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$WORK/debootstrap.log" 2>&1; then
    tail -20 "$WORK/debootstrap.log" >&2
    echo "debootstrap failed; the log is $WORK/debootstrap.log" >&2
    exit 1
  fi
  # debootstrap lists only the release; a base image also takes the point and security updates.
  cat >"$WORK/rootfs/etc/apt/sources.list" <<SOURCES
deb ${DEBIAN_MIRROR:-http://deb.debian.org/debian} bookworm main
deb ${DEBIAN_MIRROR:-http://deb.debian.org/debian} bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
  rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
  tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
  rm -rf "$WORK/rootfs"
fi

echo "wheels: GPU Steward and its pinned dependencies -> $WORK/context/wheels"
rm -rf "$WORK/context"
mkdir -p "$WORK/context"
if ! "$VENV/bin/python" -m pip wheel -q --disable-pip-version-check --wheel-dir "$WORK/context/wheels" . \
    >"$WORK/wheels.log" 2>&1; then
  cat "$WORK/wheels.log" >&2
  exit 1
fi
cp deploy/image/probe.py "$WORK/context/"

echo "build: $IMAGE from $base"
buildah build --isolation "${BUILDAH_ISOLATION:-chroot}" --format docker --build-arg "BASE=$base" \
  -f deploy/image/Containerfile -t "$IMAGE" "$WORK/context"
rm -rf "$WORK/context"
podman image inspect --format "image: {{.RepoTags}} {{.Size}} bytes" "$IMAGE"
