"""The container image, built and run for real: `python -m bench image --json` (not part of `all`).

Runs deploy/image/build.sh (a debootstrapped Debian base imported once, GPU Steward's wheels, a
buildah build of deploy/image/Containerfile) and deploy/image/smoke.sh (the demo inside the image
with podman on a volume, then the service on the demo's warehouse with its probes), and reports each
one's wall seconds, the image's size and what the smoke run printed. `--quick` simulates 3 days
instead of the month. Needs buildah, podman and debootstrap (`./dev image` installs them) and root.

The base is built only when `localhost/gpusteward-base:bookworm` is missing; set
GPUSTEWARD_BENCH_IMAGE_FRESH_BASE=1 to remove it first and time the debootstrap too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASE = "localhost/gpusteward-base:bookworm"


def _run(script: str, env: dict[str, str]) -> tuple[float, list[str]]:
    started = time.perf_counter()
    done = subprocess.run([str(ROOT / "deploy" / "image" / script)], env=env, cwd=ROOT, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - started
    lines = done.stdout.splitlines()
    if done.returncode != 0:
        sys.stderr.write(done.stdout)
        raise SystemExit(f"deploy/image/{script} failed (exit {done.returncode}); its output is above")
    return round(seconds, 1), lines


def run(quick: bool) -> dict[str, Any]:
    missing = [tool for tool in ("buildah", "podman", "debootstrap", "curl") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"bench image needs {', '.join(missing)}: run ./dev image once, or apt-get install them")
    env = {**os.environ, "VENV": str(Path(sys.executable).parents[1]), "DEMO_DAYS": "3" if quick else "31"}
    fresh_base = os.environ.get("GPUSTEWARD_BENCH_IMAGE_FRESH_BASE") == "1"
    if fresh_base:
        subprocess.run(["podman", "rmi", "-f", BASE], capture_output=True, check=False)
    build_s, build_out = _run("build.sh", env)
    image = next(line for line in build_out if line.startswith("image: "))
    smoke_s, smoke_out = _run("smoke.sh", env)
    return {
        "build_s": build_s,
        "base_built_in_this_run": any(line.startswith("base: ") for line in build_out),
        "image": image.removeprefix("image: "),
        "image_bytes": int(image.split()[-2]),
        "demo_days": int(env["DEMO_DAYS"]),
        "smoke_s": smoke_s,
        "smoke": [line for line in smoke_out if line.split(":")[0] in {
            "podman run flags", "CJK font", "reviews", "/healthz", "/readyz", "/metrics", "HEALTHCHECK",
            "the service runs as", "stopped", "dashboard health"} or line.startswith(("demo took", "ready after"))],
    }
