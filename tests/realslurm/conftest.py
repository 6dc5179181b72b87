"""Session fixtures: one real Slurm cluster, and the jobs every real test reads back."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real import missing
from tests.realslurm.cluster import SlurmCluster, installed
from tests.realslurm.scenario import Scenario, run_scenario


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    lacking = installed()
    if lacking is not None:
        missing(
            lacking,
            "apt-get install "
            + Path(__file__).parents[2].joinpath(".ci/packages.d/slurm.txt").read_text().splitlines()[-1],
        )
    if os.geteuid() != 0:
        missing("root", "the Slurm test cluster makes fake GPU devices with mknod and runs slurmd as root")
    base = Path(tempfile.mkdtemp(prefix="gpusteward-slurm-"))
    cluster = SlurmCluster(base)
    try:
        cluster.start()
        print(f"\nSlurm test cluster up in {cluster.timings['ready']:.1f} s: {cluster.timings}")
        yield cluster
    finally:
        cluster.stop()
        assert cluster.alive() == []
    shutil.rmtree(base, ignore_errors=True)  # kept (with its logs) when bring-up or a stop failed


@pytest.fixture(scope="session")
def scenario(slurm: SlurmCluster) -> Scenario:
    return run_scenario(slurm)
