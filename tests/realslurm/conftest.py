"""Session fixtures: one real Slurm cluster, and the jobs every real test reads back."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real import missing
from tests.realslurm.cluster import FLAT, NESTED, Layout, SlurmCluster, installed
from tests.realslurm.scenario import Scenario, run_scenario
from tests.realslurm.scenario_nested import NestedScenario, run_nested


def _cluster(layout: Layout) -> Iterator[SlurmCluster]:
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
    cluster = SlurmCluster(base, layout)
    try:
        cluster.start()
        print(f"\nSlurm test cluster ({layout.name}) up in {cluster.timings['ready']:.1f} s: {cluster.timings}")
        yield cluster
    finally:
        cluster.stop()
        assert cluster.alive() == []
    shutil.rmtree(base, ignore_errors=True)  # kept (with its logs) when bring-up or a stop failed


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    """Today's layout: 2 nodes x 8 GPUs, four partitions, PreemptMode=REQUEUE, flat accounts."""
    yield from _cluster(FLAT)


@pytest.fixture(scope="session")
def nested_slurm() -> Iterator[SlurmCluster]:
    """The second layout (issue 19): 3 x 4 GPUs, train/dev, PreemptMode=CANCEL, research -> {vision, nlp}."""
    yield from _cluster(NESTED)


@pytest.fixture(scope="session")
def scenario(slurm: SlurmCluster) -> Scenario:
    return run_scenario(slurm)


@pytest.fixture(scope="session")
def nested(nested_slurm: SlurmCluster) -> NestedScenario:
    return run_nested(nested_slurm)
