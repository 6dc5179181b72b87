"""`gpusteward serve-fleet`: the simulated fleet as dcgm-exporter endpoints on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("serve-fleet")
@click.option("--nodes", type=int, default=8, show_default=True, help="Simulated nodes (8 GPUs each).")
@click.option("--seed", type=int, default=1, show_default=True, help="Workload seed (as for `simulate`).")
@click.option("--port", type=int, default=9400, show_default=True, help="Port on 127.0.0.1 (0: any free port).")
@click.option("--targets-out", type=click.Path(dir_okay=False), help="Write the file_sd target list here.")
def serve_fleet(nodes: int, seed: int, port: int, targets_out: str | None) -> None:
    """Serve every simulated node's /metrics as dcgm-exporter would print it now; Ctrl-C stops."""
    from simulator.serve import LiveFleet, serve

    fleet = LiveFleet(nodes, seed)
    server = serve(fleet, port)
    bound = server.server_address[1]
    if targets_out:
        Path(targets_out).write_text(fleet.targets(bound), encoding="utf-8")
    click.echo(f"serving {len(fleet.hosts)} exporters on http://127.0.0.1:{bound}/<host>/metrics")
    click.echo(f"targets: http://127.0.0.1:{bound}/targets.json" + (f" and {targets_out}" if targets_out else ""))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
