from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpusteward.config.schema import Config
from reports import Review, build_review, write_review
from reports.locale import LANGS
from sla.outputs import MonthOutputs
from tests.real import missing, require_binary
from tests.reports.fixtures import demo_config, demo_outputs


@pytest.fixture
def config() -> Config:
    return demo_config()


@pytest.fixture
def outputs() -> MonthOutputs:
    return demo_outputs()


@pytest.fixture
def review(outputs: MonthOutputs, config: Config) -> Review:
    return build_review(outputs, config)


@pytest.fixture(scope="session")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture month's review as PDF in each language (test_pdf, test_no_cjk_font): rendered once."""
    require_binary("pdftoppm", package="poppler-utils")
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, check=False).stdout
    if "Noto Sans CJK" not in fonts and "WenQuanYi" not in fonts:
        missing("a CJK font", "apt-get install fonts-noto-cjk")
    review: Review = build_review(demo_outputs(), demo_config())
    out = tmp_path_factory.mktemp("pdf")
    paths = write_review(review, out, formats=["pdf"], langs=LANGS)
    return {p.name.split(".")[1]: p for p in paths}
