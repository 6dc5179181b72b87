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


def example_config_with(folder: Path, extra: str) -> str:
    """The example config with the TOML `extra` appended (tables it lacks, such as `[limits]`), written
    into `folder`; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpusteward.toml"
    path.write_text(Path(example_config_path()).read_text(encoding="utf-8") + "\n" + extra, encoding="utf-8")
    return str(path)


def example_config_markdown_reviews(folder: Path) -> Path:
    """The example config written into `folder`, its reviews as Markdown only: for service tests that
    trigger a review to test the service, not the rendering (two PDFs took most of a minute; the formats
    are tested on the demo month)."""
    text = Path(example_config_path()).read_text(encoding="utf-8")
    formats = 'formats = ["md", "html", "pdf"]\n'
    assert formats in text, "the example config's [reports] formats changed"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpusteward.toml"
    path.write_text(text.replace(formats, 'formats = ["md"]\n'), encoding="utf-8")
    return path
