"""The showback page: cost per team, scenario, cluster and account at the config's prices, with the
unallocated capacity apart (SHOWBACK, docs/showback.md). Team-scoped like every page: a team sees its
own rows, including what it was charged of the unallocated capacity, never another team's."""

from __future__ import annotations

import polars as pl
import streamlit as st

from dashboards.folds import fold
from dashboards.tables import show_table
from dashboards.texts import Texts
from dashboards.view import View

_MONEY = ("gpu_cost", "idle_cost", "energy_cost", "unallocated_share", "total_cost")


def _who(view: View, frame: pl.DataFrame) -> list[str]:
    tx = view.tx
    return [tx("showback.unallocated") if kind == "unallocated" and team is None else view.team_name(team)
            for team, kind in zip(frame["team"], frame["kind"], strict=True)]


def by_team(view: View) -> pl.DataFrame | None:
    """One row per team (and the unallocated capacity): GPU-hours and each part of the cost."""
    frame = view.outputs.showback
    if frame.is_empty():
        return None
    tx = view.tx
    teams = frame.group_by("team", "kind").agg(
        pl.col("gpu_hours").sum(), pl.col("idle_gpu_hours").sum(), pl.col("energy_kwh").sum(),
        *[pl.col(c).sum() for c in _MONEY]).sort(["total_cost", "team"], descending=[True, False], nulls_last=True)
    return pl.DataFrame({
        tx("col.team"): _who(view, teams),
        tx("col.gpu_hours"): teams["gpu_hours"].round(1),
        tx("col.gpu_cost"): teams["gpu_cost"].cast(pl.Float64),
        tx("col.idle_cost"): teams["idle_cost"].cast(pl.Float64),
        tx("col.energy_kwh"): teams["energy_kwh"].round(1),
        tx("col.energy_cost"): teams["energy_cost"].cast(pl.Float64),
        tx("col.unallocated_share"): teams["unallocated_share"].cast(pl.Float64),
        tx("col.total_cost"): teams["total_cost"].cast(pl.Float64),
    })


def rows(view: View) -> pl.DataFrame | None:
    """Every row as the export writes it (team x scenario x cluster x account), with its completeness."""
    frame = view.outputs.showback
    if frame.is_empty():
        return None
    tx = view.tx
    return pl.DataFrame({
        tx("col.cluster"): frame["cluster"],
        tx("col.team"): _who(view, frame),
        tx("col.scenario"): [tx.fmt.term("scenario", s) if s else "—" for s in frame["scenario"].to_list()],
        tx("col.account"): frame["account"].fill_null("—"),
        tx("col.gpu_hours"): frame["gpu_hours"].round(1),
        tx("col.total_cost"): frame["total_cost"].cast(pl.Float64),
        tx("col.completeness"): (frame["completeness"] * 100).round(1),
    })


def _chart(tx: Texts, table: pl.DataFrame) -> None:
    x = tx("col.team")
    parts = [tx("col.gpu_cost"), tx("col.energy_cost"), tx("col.unallocated_share")]
    st.bar_chart(table, x=x, y=parts, x_label=x, y_label=tx("showback.y"), stack=True)


def showback(view: View) -> None:
    tx = view.tx
    frame = view.outputs.showback
    if frame.is_empty():
        st.info(tx("common.not_available", reason=tx("common.no_rows", what=tx.fmt.term("source", "showback"))))
        return
    sb = view.config.showback
    st.caption(tx("showback.help", currency=str(frame["currency"][0]),
                  rule=tx(f"showback.rule.{sb.unallocated}", team=view.team_name(sb.platform_team or None))))
    table = by_team(view)
    if table is not None:
        _chart(tx, table)
        show_table(table, tx)
    st.subheader(tx("showback.rows"))
    st.caption(tx("showback.export"))
    detail = rows(view)
    if detail is not None:  # the export's rows, read when looked for: folded, built only when unfolded
        with fold(tx("showback.rows_folded", count=detail.height), "showback.rows") as unfolded:
            if unfolded:
                show_table(detail, tx)
