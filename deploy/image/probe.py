"""The container's HEALTHCHECK: GET a path of the service on loopback; exit 0 on 200, else 1.

`python3 probe.py /healthz` (process alive) or `/readyz` (warehouse open and migrated, first cycle done).
$GPUSTEWARD_PROBE_BASE says where the service listens (default http://127.0.0.1:9464). An https base
is not verified: the probe speaks to its own container over loopback, as the kubelet's probes do.
Standard library only, so the probe does not depend on the service's own packages importing.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "/healthz"
    base = os.environ.get("GPUSTEWARD_PROBE_BASE", "http://127.0.0.1:9464").rstrip("/")
    context = None
    if base.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(base + path, timeout=4, context=context) as answer:  # noqa: S310
            status = int(answer.status)
    except (urllib.error.URLError, OSError) as e:
        print(f"{base}{path}: {e}", file=sys.stderr)
        return 1
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
