#!/usr/bin/env bash
# Runs the demo inside the image with podman, then the service on the demo's warehouse, and checks
# /healthz, /readyz, /metrics, the image's HEALTHCHECK and the Chinese font (`./dev image`).
#
#   IMAGE             the image (default localhost/gpusteward:<version>)
#   DEMO_DAYS         days the demo simulates (default 31: the whole month)
#   PODMAN_RUN_FLAGS  extra `podman run` flags; unset, the first set that starts a container here is used
#                     (none; then runc with the host's open-files limit, for sandboxes where crun
#                     cannot set up hybrid cgroups or raise rlimits)
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-.venv}
version=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("gpusteward"))')
IMAGE=${IMAGE:-localhost/gpusteward:$version}
volume=gpusteward-smoke-$$
name=gpusteward-smoke-$$

if [ -n "${PODMAN_RUN_FLAGS+set}" ]; then
  read -r -a flags <<<"$PODMAN_RUN_FLAGS"
else
  flags=()
  if ! podman run --rm --entrypoint true "$IMAGE" 2>"/tmp/$name.err"; then
    echo "podman run with the defaults failed: $(tail -1 "/tmp/$name.err")"
    flags=(--runtime runc --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
    podman run --rm "${flags[@]}" --entrypoint true "$IMAGE"
  fi
  rm -f "/tmp/$name.err"
fi
echo "podman run flags: ${flags[*]:-(none)}"
# --network host: the host probes the service on loopback (and no CNI plugins are needed);
# --read-only: everything the service writes goes to the volume (and /tmp).
run=(podman run "${flags[@]}" --network host --read-only --tmpfs /tmp -v "$volume:/var/lib/gpusteward")
# podman runs a HEALTHCHECK on a systemd timer; without systemd it only logs errors, and
# `podman healthcheck run` below runs the check by hand either way.
health=()
[ -d /run/systemd/system ] || health=(--health-interval disable)

cleanup() {
  podman rm -f -t 30 "$name-dashboard" >/dev/null 2>&1 || true
  podman rm -f -t 30 "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "demo: ${DEMO_DAYS:-31} days, in $IMAGE"
started=$SECONDS
"${run[@]}" --rm --no-healthcheck "$IMAGE" demo --out /var/lib/gpusteward/demo --days "${DEMO_DAYS:-31}"
echo "demo took $((SECONDS - started)) s"

echo "the Chinese review's font, and the reviews written:"
"${run[@]}" --rm --no-healthcheck --entrypoint python3 "$IMAGE" -c '
from pathlib import Path
from reports.fonts import chinese_family
family = chinese_family()
print("CJK font:", family)
reviews = sorted(p.name for p in Path("/var/lib/gpusteward/demo").rglob("review*") if p.is_file())
print("reviews:", ", ".join(reviews))
raise SystemExit(0 if family and any("zh" in r for r in reviews) else 1)
'

port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "serve: the demo's warehouse, on 127.0.0.1:$port"
"${run[@]}" "${health[@]}" -d --name "$name" -e "GPUSTEWARD_PROBE_BASE=http://127.0.0.1:$port" "$IMAGE" \
  serve --config /var/lib/gpusteward/demo/gpusteward.toml --listen "127.0.0.1:$port" >/dev/null
started=$SECONDS
until curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
  if ((SECONDS - started > 300)) || [ "$(podman inspect -f '{{.State.Running}}' "$name")" != true ]; then
    podman logs "$name" | tail -30 >&2
    echo "the service did not become ready" >&2
    exit 1
  fi
  sleep 1
done
echo "ready after $((SECONDS - started)) s"
echo "/healthz: $(curl -fsS "http://127.0.0.1:$port/healthz")"
echo "/readyz: $(curl -fsS "http://127.0.0.1:$port/readyz")"
metrics=$(curl -fsS "http://127.0.0.1:$port/metrics" | grep -c '^gpusteward_')
echo "/metrics: $metrics gpusteward_ samples"
((metrics > 0))
podman healthcheck run "$name" && echo "HEALTHCHECK: healthy"

dport=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "dashboard: gpusteward dashboard on the service's read model, the volume mounted read-only, on 127.0.0.1:$dport"
podman run "${flags[@]}" --network host --read-only --tmpfs /tmp -v "$volume:/var/lib/gpusteward:ro" \
  -e HOME=/tmp -e MPLCONFIGDIR=/tmp/matplotlib -e NUMBA_CACHE_DIR=/tmp/numba \
  --no-healthcheck -d --name "$name-dashboard" "$IMAGE" dashboard --config /var/lib/gpusteward/demo/gpusteward.toml \
  --read-model /var/lib/gpusteward/demo/readmodel --api "http://127.0.0.1:$port" --port "$dport" >/dev/null
started=$SECONDS
until curl -fsS "http://127.0.0.1:$dport/_stcore/health" >/dev/null 2>&1; do
  if ((SECONDS - started > 120)) || [ "$(podman inspect -f '{{.State.Running}}' "$name-dashboard")" != true ]; then
    podman logs "$name-dashboard" | tail -30 >&2
    echo "the dashboard did not start" >&2
    exit 1
  fi
  sleep 1
done
echo "dashboard health: $(curl -fsS "http://127.0.0.1:$dport/_stcore/health") after $((SECONDS - started)) s"
podman stop -t 30 "$name-dashboard" >/dev/null
echo "the service runs as: $(podman top "$name" user | tail -1)"
podman stop -t 60 "$name" >/dev/null
echo "stopped: exit code $(podman inspect -f '{{.State.ExitCode}}' "$name")"
