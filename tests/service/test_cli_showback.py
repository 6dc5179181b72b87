"""`gpusteward showback`: the chargeback file in each format, read back as written, with stable columns."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from gpusteward.config import load_config
from gpusteward.domain import Month
from service.cli import cli
from service.cli_showback import COLUMNS, Format, export_frame, read_export, write_export
from sla.results import SHOWBACK
from tests.warehouse.showback_fleet import store_evaluation, store_fleet
from warehouse import open_warehouse

CONFIG_TOML = """
[warehouse]
path = "w.duckdb"
[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]
[showback]
currency = "EUR"
gpu_hour = 2.00
kwh = 0.5
unallocated = "proportional"
"""


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config and its warehouse with November 2026 evaluated (two GPUs, one job, two hours)."""
    folder = tmp_path_factory.mktemp("showback")
    (folder / "c.toml").write_text(CONFIG_TOML, encoding="utf-8")
    config = load_config(folder / "c.toml")
    with open_warehouse(folder / "w.duckdb") as wh:
        store_fleet(wh)
        store_evaluation(wh, config, Month(2026, 11))
    return folder


def _sample() -> pl.DataFrame:
    row = dict.fromkeys(SHOWBACK) | {
        "cluster": "east", "team": "nlp", "scenario": "training", "account": "nlp", "kind": "allocated",
        "currency": "EUR", "jobs": 3, "gpu_hours": 1 / 3, "gpu_cost": Decimal("12.34"), "idle_gpu_hours": 0.0,
        "idle_cost": Decimal("0.00"), "energy_kwh": 1.5, "energy_cost": Decimal("0.75"),
        "unallocated_share": Decimal("-0.01"), "total_cost": Decimal("13.08"), "completeness": 0.98,
    }
    free = dict.fromkeys(SHOWBACK) | {"cluster": "east", "kind": "unallocated", "currency": "EUR",
                                                "gpu_cost": Decimal("0.10"), "total_cost": Decimal("0.10")}
    return export_frame(pl.DataFrame([row, free], schema=SHOWBACK, orient="row"), Month(2026, 11))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_an_export_reads_back_as_written(fmt: Format) -> None:
    frame = _sample()
    buffer = io.BytesIO()
    write_export(frame, fmt, buffer)
    buffer.seek(0)
    back = read_export(buffer, fmt)
    assert back.columns == list(COLUMNS)
    assert back.equals(frame, null_equal=True)
    assert back["gpu_cost"].to_list() == [Decimal("12.34"), Decimal("0.10")]


def test_costs_are_written_as_exact_decimals_not_floats() -> None:
    buffer = io.BytesIO()
    write_export(_sample(), "json", buffer)
    assert '"gpu_cost":"12.34"' in buffer.getvalue().decode()
    buffer = io.BytesIO()
    write_export(_sample(), "csv", buffer)
    assert buffer.getvalue().decode().splitlines()[0] == ",".join(COLUMNS)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_the_command_writes_the_month(evaluated: Path, fmt: Format) -> None:
    out = evaluated / f"november.{fmt}"
    result = CliRunner().invoke(cli, ["showback", "--config", str(evaluated / "c.toml"), "--month", "2026-11",
                                      "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = read_export(out, fmt)
    assert frame.columns == list(COLUMNS)
    assert set(frame["kind"]) == {"allocated", "unallocated"}
    assert set(frame["currency"]) == {"EUR"}
    assert set(frame["month"]) == {"2026-11"}
    # proportional: the unallocated capacity (2 GPU-hours, 4.00) and its energy were shared to nlp's row
    assert sum(frame["total_cost"].to_list(), Decimal(0)) == sum(frame["gpu_cost"].to_list(), Decimal(0)) + sum(
        frame["energy_cost"].to_list(), Decimal(0))
    nlp = frame.filter(pl.col("team") == "nlp").row(0, named=True)
    assert nlp["unallocated_share"] > Decimal("4.00")


def test_csv_goes_to_stdout_and_an_unevaluated_month_is_refused(evaluated: Path) -> None:
    config = str(evaluated / "c.toml")
    result = CliRunner().invoke(cli, ["showback", "--config", config, "--month", "2026-11"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == ",".join(COLUMNS)
    result = CliRunner().invoke(cli, ["showback", "--config", config, "--month", "2026-09"])
    assert result.exit_code == 2
    assert "gpusteward evaluate --month 2026-09" in result.output
    result = CliRunner().invoke(cli, ["showback", "--config", config, "--format", "parquet"])
    assert result.exit_code == 2
    assert "--out FILE" in result.output


def test_every_column_is_documented_in_its_order() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "showback.md").read_text(encoding="utf-8")
    table = doc[doc.index("## Columns"):doc.index("## Where it lives")]
    documented = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert documented == list(COLUMNS)
