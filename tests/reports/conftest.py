from __future__ import annotations

import pytest

from gpusteward.config.schema import Config
from reports import Review, build_review
from sla.outputs import MonthOutputs
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
