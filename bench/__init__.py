"""Benchmarks: `python -m bench NAME --json`, each measuring ratios side by side in one run."""
