"""What every page gets: the published read model, the chosen month, filters, language and team scope.

Filters (period, cluster, team, scenario) are applied here, once, to the month's frames; a team
scope set by a trusted proxy (see docs/service.md) fixes the team filter to that team.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

import polars as pl

from dashboards.data import OverviewData, firing_alerts, newest_row, pool_gpus, team_names
from dashboards.texts import Texts
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from reports.locale import Lang
from sla.outputs import MonthOutputs

TEAM_HEADER = "X-Gpusteward-Team"


class Reader(Protocol):
    """The read model's API (warehouse.readmodel.ReadModel) as pages use it."""

    @property
    def version(self) -> str: ...
    @property
    def published_at(self) -> datetime: ...

    def months(self) -> list[Month]: ...
    def month_outputs(self, month: Month) -> MonthOutputs: ...
    def status(self) -> dict[str, Any]: ...
    def alerts(self, month: Month | None = None) -> pl.DataFrame: ...
    def plans(self, month: Month | None = None) -> pl.DataFrame: ...
    def alert_states(self) -> pl.DataFrame: ...
    def queue_wait_daily(self, month: Month) -> pl.DataFrame: ...
    def allocation_hourly(self, month: Month) -> pl.DataFrame: ...
    def inference_hourly(self, month: Month) -> pl.DataFrame: ...
    def idle_daily(self, month: Month) -> pl.DataFrame: ...
    def preemptions_daily(self, month: Month) -> pl.DataFrame: ...
    def control_actions(self) -> pl.DataFrame: ...
    def reclaim_pending(self) -> pl.DataFrame: ...
    def job_records(self, month: Month) -> pl.DataFrame: ...
    def gpu_inventory(self) -> pl.DataFrame: ...
    def gpu_days(self) -> list[date]: ...
    def gpu_buckets(
        self, lo: datetime, hi: datetime, *, cluster: str | None = None, job_id: str | None = None
    ) -> pl.DataFrame: ...


@dataclass(frozen=True)
class Filters:
    """Empty tuples mean: everything."""

    clusters: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()


def _keep(frame: pl.DataFrame, column: str, values: tuple[str, ...]) -> pl.DataFrame:
    if not values or column not in frame.columns:
        return frame
    return frame.filter(pl.col(column).is_in(list(values)))


def _queue_cluster(subject: pl.Expr) -> pl.Expr:
    return subject.str.split("/").list.first()


def filter_results(results: pl.DataFrame, f: Filters) -> pl.DataFrame:
    """Scenario filter on every row; cluster filter on queue subjects (cluster/queue); team filter keeps only
    the teams' own rows (subject_kind team), since queues, services and the pool are shared."""
    out = _keep(results, "scenario", f.scenarios)
    if f.clusters and "subject" in out.columns:
        in_cluster = _queue_cluster(pl.col("subject")).is_in(list(f.clusters))
        out = out.filter((pl.col("subject_kind") != "queue") | in_cluster)
    if f.teams and "subject" in out.columns:
        out = out.filter((pl.col("subject_kind") == "team") & pl.col("subject").is_in(list(f.teams)))
    return out


def filter_outputs(outputs: MonthOutputs, f: Filters) -> MonthOutputs:
    def rows(frame: pl.DataFrame) -> pl.DataFrame:
        return _keep(_keep(_keep(frame, "cluster", f.clusters), "team", f.teams), "scenario", f.scenarios)

    return dataclasses.replace(
        outputs,
        results=filter_results(outputs.results, f),
        idle=rows(outputs.idle),
        usage=rows(outputs.usage),
        episodes=_keep(outputs.episodes, "subject", f.clusters) if not f.teams else outputs.episodes.head(0),
        completeness=_keep(outputs.completeness, "cluster", f.clusters),
        plan_items=_keep(_keep(outputs.plan_items, "cluster", f.clusters), "team", f.teams),
        showback=rows(outputs.showback),
    )


def filter_alerts(alerts: pl.DataFrame, f: Filters) -> pl.DataFrame:
    """Protection-line alerts name a cluster; a team-scoped view sees none (they are the platform's)."""
    if f.teams:
        return alerts.head(0)
    return _keep(alerts, "subject", f.clusters)


@dataclass(frozen=True)
class View:
    model: Reader
    month: Month
    outputs: MonthOutputs  # filtered
    filters: Filters
    lang: Lang
    config: Config
    now: datetime  # naive UTC
    team_scope: str | None = None
    api_url: str | None = None
    api_token: str | None = field(default=None, repr=False)
    on_behalf: Mapping[str, str] = field(default_factory=dict)  # the viewer's sign-in headers, sent with actions

    @property
    def can_call_api(self) -> bool:
        """An API address, and a token or a signed-in viewer to act as."""
        return bool(self.api_url and (self.api_token or self.on_behalf))

    @property
    def tx(self) -> Texts:
        return Texts(self.lang, self.config.timezone)

    def team_name(self, key: object) -> str:
        names = team_names(self.config)
        return names.get(str(key), str(key)) if key is not None else "—"

    def alerts(self) -> pl.DataFrame:
        return filter_alerts(self.model.alerts(self.month), self.filters)

    def data_as_of(self) -> datetime | None:
        return newest_row(self.model.status())

    def data_age(self) -> timedelta | None:
        as_of = self.data_as_of()
        return self.now - as_of if as_of is not None else None

    def overview(self) -> OverviewData:
        return OverviewData(
            month=self.month,
            outputs=self.outputs,
            status=self.model.status(),
            alerts=firing_alerts(self.alerts()),
            data_age=self.data_age(),
            data_as_of=self.data_as_of(),
            months=tuple(self.model.months()),
            team_names=team_names(self.config),
            zone=self.config.timezone,
            pool_gpus=pool_gpus(self.config) if not (self.filters.clusters or self.filters.teams) else None,
        )


def choices(outputs: MonthOutputs, config: Config) -> tuple[list[str], list[str], list[str]]:
    """Clusters, teams and scenarios to offer in the filters: configured ones plus those in the data."""
    clusters = {c.name for c in config.clusters} | set(outputs.usage["cluster"].drop_nulls().to_list())
    teams = set(config.teams) | set(outputs.usage["team"].drop_nulls().to_list())
    scenarios = set(outputs.usage["scenario"].drop_nulls().to_list()) | set(
        outputs.results["scenario"].drop_nulls().to_list()
    )
    return sorted(clusters), sorted(teams), sorted(scenarios)


def naive_now(now: datetime | None = None) -> datetime:
    moment = now or datetime.now(UTC)
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
