"""Capture the real outputs of the nested layout into a folder: `python -m tests.realslurm.capture_nested DIR`.

Starts the nested Slurm 22.05 test cluster, runs `run_nested`, and writes what the unit tests in
`tests/collectors/` and `tests/sla/` replay (`tests/data/slurm-22.05-nested/`): `sacct --json -D`,
`sacct -P` with the columns `gpusteward import` reads, the live queue (`squeue --json` and slurmrestd
`/jobs`) while two jobs waited on their account limits, associations (sacctmgr and slurmrestd), and
what sbatch said for the job it refused.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.realslurm.cluster import NESTED, SlurmCluster
from tests.realslurm.scenario_nested import SACCT_P_FORMAT, run_nested


def capture(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    slurm = SlurmCluster(Path(tempfile.mkdtemp(prefix="gpusteward-slurm-")), NESTED)
    try:
        slurm.start()
        s = run_nested(slurm)
        sock = slurm.rest_socket
        (out / "sacct.json").write_text(slurm.run("sacct", "-a", "-D", "-X", "--json"))
        (out / "sacct-P.txt").write_text(slurm.run("sacct", "-a", "-D", "-X", "-P", "-o", SACCT_P_FORMAT))
        (out / "squeue-pending.json").write_text(json.dumps(s.squeue_pending, indent=1))
        (out / "rest-jobs-pending.json").write_text(json.dumps(s.rest_pending, indent=1))
        fmt = "format=Cluster,Account,User,ParentName,GrpTRES,Priority"
        (out / "assoc.txt").write_text(slurm.run("sacctmgr", "-P", "show", "assoc", f"cluster={NESTED.cluster}", fmt))
        (out / "rest-associations.json").write_text(
            slurm.run("curl", "-s", "--unix-socket", sock, "http://x/slurmdb/v0.0.38/associations")
        )
        (out / "rest-slurmdb-jobs.json").write_text(
            slurm.run("curl", "-s", "--unix-socket", sock, "http://x/slurmdb/v0.0.38/jobs")
        )
        (out / "scenario.json").write_text(json.dumps(
            {"ids": s.ids, "array_job": s.array_job, "rejected": s.rejected, "pending_reasons": s.pending_reasons,
             "scav_after": s.scav_after}, indent=1,
        ))
    finally:
        slurm.stop()


if __name__ == "__main__":
    capture(Path(sys.argv[1]))
