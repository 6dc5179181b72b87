"""Property-based fuzzing: no crash other than the documented error types.

The exposition parser raises InputError, the sacct and slurmrestd readers InputError (or report a
skipped record as a problem), the config loader ConfigError. Each property runs a bounded number
of examples here; `python -m tests.badinput.fuzz --minutes N` runs the same targets for longer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.badinput import scrape_targets, service_targets, targets

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(text=targets.exposition_texts, openmetrics=st.booleans())
def test_exposition_parser(text: str, openmetrics: bool) -> None:
    targets.exposition(text, openmetrics)


@FAST
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_sacct_json_text(text: str) -> None:
    targets.sacct(text)


@FAST
@given(data=targets.mutated_json() | targets.json_values)
def test_sacct_reader_on_mutated_answers(data: Any) -> None:
    targets.sacct_data(data)


@FAST
@given(name=st.sampled_from(sorted(targets.SLURM_READERS)), data=targets.mutated_json() | targets.json_values)
def test_slurmrestd_readers(name: str, data: Any) -> None:
    targets.slurm(name, data)


@FAST
@given(text=st.text(max_size=120))
def test_slurm_text_readers(text: str) -> None:
    targets.slurm_text(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=targets.config_texts)
def test_config_loader(text: str) -> None:
    targets.config(text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=targets.exposition_texts, openmetrics=st.booleans(), inference=st.booleans())
def test_the_live_scrapers(text: str, openmetrics: bool, inference: bool) -> None:
    scrape_targets.live_scrape(text, openmetrics, inference)


@pytest.fixture(scope="module")
def folder_rig() -> Iterator[service_targets.FolderRig]:
    with service_targets.folder_rig() as rig:
        yield rig


@pytest.fixture(scope="module")
def api_rig() -> Iterator[service_targets.ApiRig]:
    with service_targets.api_rig() as rig:
        yield rig


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=service_targets.hostile_files)
def test_the_service_import_folder(folder_rig: service_targets.FolderRig, files: list[tuple[str, bytes]]) -> None:
    service_targets.import_folder(folder_rig, files)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=service_targets.raw_requests())
def test_the_control_api(api_rig: service_targets.ApiRig, request: bytes) -> None:
    service_targets.control_api(api_rig, request)
