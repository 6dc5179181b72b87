"""The example config copied where a test's CLI run needs one (commands have no fallback config)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpusteward.config import example_config_path


def example_config_in(folder: Path) -> str:
    """Copy the example config (the simulated pool's) into `folder` once; its path, for --config."""
    path = folder / "gpusteward.toml"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(example_config_path(), path)
    return str(path)


def config_env(folder: Path) -> dict[str, str | None]:
    """The environment of a CLI run that reads the example config copied into `folder`."""
    return {"GPUSTEWARD_CONFIG": example_config_in(folder)}
