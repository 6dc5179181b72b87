"""The seeded GPU fleet simulator: writes a month of Slurm, DCGM and vLLM data in real formats.

`simulate(out_dir, start, days, seed)` is the whole interface; see docs/simulator.md.
"""

from simulator.manifest import IMPORT_IGNORE, MANIFEST_FILE, ClusterInfo, Manifest, Problem
from simulator.run import simulate

__all__ = ["IMPORT_IGNORE", "MANIFEST_FILE", "ClusterInfo", "Manifest", "Problem", "simulate"]
