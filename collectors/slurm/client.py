"""The Slurm client for reading: jobs (with their whole requeue history), quotas and current use.

One client, two transports: the CLI (`sacct --json --duplicates`, `sacctmgr -P`, `squeue --json`)
and slurmrestd (`/slurmdb/vX/jobs`, `/qos`, `/associations`, `/slurm/vX/partitions`, `/jobs`).
Jobs come back as a `CollectedBatch` of JOBS and JOB_EVENTS; quotas as QUOTA_SNAPSHOTS.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from collectors.batch import CollectedBatch, Problem
from collectors.sacct import _events, _job_id, read_sacct
from collectors.sacctmgr import read_assoc_tree
from collectors.slurm import shapes
from collectors.slurm.transport import SlurmCli, SlurmRest
from gpusteward.errors import InputError, StewardError


def assoc_args(cluster: str) -> list[str]:
    return ["-P", "show", "assoc", f"cluster={cluster}", "format=Cluster,Account,User,ParentName,GrpTRES,Priority"]


# Records whose job may have earlier records outside the window (their history is fetched by id).
_REQUEUE_STATES = frozenset({"PREEMPTED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "NODE_FAIL"})


def _id_of(record: Any) -> int | None:
    """The job id of a window record, None for one read_sacct skipped as unreadable."""
    try:
        return _job_id(record.get("job_id")) if isinstance(record, dict) else None
    except (TypeError, ValueError):
        return None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


@dataclass
class SlurmClient:
    """Reads one Slurm cluster through `rest` when given, else through `cli`.

    Exit codes: Slurm 22.05's JSON reports 0 for every job, so `read_sacct` leaves them null; when a
    CLI is available they are filled in from `sacct -P -o JobIDRaw,Submit,ExitCode`, which is right.
    """

    cluster: str
    cli: SlurmCli | None = None
    rest: SlurmRest | None = None
    api: str = "v0.0.38"

    def __post_init__(self) -> None:
        if self.cli is None and self.rest is None:
            self.cli = SlurmCli()

    @property
    def source(self) -> str:
        return self.rest.where if self.rest is not None else "sacct"

    # -- jobs ----------------------------------------------------------------------------------

    def jobs(self, start: datetime, end: datetime) -> CollectedBatch:
        """JOBS and JOB_EVENTS for jobs in the window [start, end] (UTC), each with its whole history."""
        data = self._jobs_window(start, end)
        jobs, _, problems = read_sacct(data, source=self.source)
        ids = sorted(set(jobs["job_id"].to_list()))
        if ids:
            history = self._jobs_by_id(ids, data, jobs)
            if history is not None:
                jobs, _, more = read_sacct(history, source=self.source)
                problems += more
        jobs = jobs.filter(pl.col("cluster").is_null() | (pl.col("cluster") == self.cluster))
        jobs = jobs.with_columns(pl.col("cluster").fill_null(self.cluster))
        jobs = self._fill_exit_codes(jobs, problems)
        batch = CollectedBatch(source=f"{self.source} jobs {_iso(start)}..{_iso(end)}", problems=problems)
        batch.add("jobs", jobs)
        batch.add("job_events", _events(jobs))
        return batch

    def _jobs_window(self, start: datetime, end: datetime) -> Any:
        if self.rest is not None:
            params = {"start_time": _iso(start), "end_time": _iso(end)}
            return self.rest.get(f"/slurmdb/{self.api}/jobs", params=params)
        assert self.cli is not None
        args = ["--json", "--duplicates", "-X", "-a", "-M", self.cluster, "-S", _iso(start), "-E", _iso(end)]
        return self.cli.json("sacct", args)

    def _jobs_by_id(self, ids: list[int], window: Any, jobs: pl.DataFrame) -> Any | None:
        """Every record of the given jobs, so a requeued job keeps its earlier records.

        The CLI asks for all of them at once (`-j`, no time bounds); slurmrestd has no id list, so
        only jobs with a requeue state in the window are asked for one by one.
        """
        if self.rest is None:
            assert self.cli is not None
            args = ["--json", "--duplicates", "-X", "-a", "-M", self.cluster, "-j", ",".join(map(str, ids))]
            return self.cli.json("sacct", args)
        requeued = set(jobs.filter(pl.col("state").is_in(list(_REQUEUE_STATES)))["job_id"].to_list())
        if not requeued:
            return None
        # Records read_sacct could not read were reported once already: leave them out here.
        records = [j for j in window["jobs"] if (i := _id_of(j)) is not None and i not in requeued]
        for job_id in sorted(requeued):
            path = f"/slurmdb/{self.api}/job/{job_id}"
            history = self.rest.get(path).get("jobs")
            if not isinstance(history, list):
                raise InputError(f"{self.rest.where} GET {path}", "no 'jobs' list in the answer")
            records.extend(history)
        return {**window, "jobs": records}

    def _fill_exit_codes(self, jobs: pl.DataFrame, problems: list[Problem]) -> pl.DataFrame:
        unknown = pl.col("exit_code").is_null() & pl.col("exit_signal").is_null()
        missing = jobs.filter(unknown & pl.col("end_time").is_not_null())
        if self.cli is None or missing.is_empty():
            return jobs
        ids = ",".join(str(i) for i in sorted(set(missing["job_id"].to_list())))
        args = ["-P", "-n", "-X", "-D", "-a", "-M", self.cluster, "-o", "JobIDRaw,Submit,ExitCode", "-j", ids]
        try:
            text = self.cli.run("sacct", args)
        except StewardError as exc:  # exit codes are a refinement: keep the jobs, say what is missing
            problems.append(Problem("sacct -o ExitCode", f"exit codes left unknown: {exc}"))
            return jobs
        codes = shapes.exit_codes(text.splitlines(), source="sacct -o JobIDRaw,Submit,ExitCode")
        keyed = pl.DataFrame(
            [(j, s, c, sig) for (j, s), (c, sig) in codes.items()],
            schema={"job_id": pl.Int64, "submit_time": jobs.schema["submit_time"], "_exit": pl.Int32,
                    "_signal": pl.Int32},
            orient="row",
        )
        joined = jobs.join(keyed, on=["job_id", "submit_time"], how="left")
        known = pl.col("exit_code").is_not_null() | pl.col("exit_signal").is_not_null()
        return joined.with_columns(
            pl.when(known).then(pl.col("exit_code")).otherwise(pl.col("_exit")).alias("exit_code"),
            pl.when(known).then(pl.col("exit_signal")).otherwise(pl.col("_signal")).alias("exit_signal"),
        ).drop("_exit", "_signal")

    # -- quotas and use ------------------------------------------------------------------------

    def quotas(self, ts: datetime) -> CollectedBatch:
        """QUOTA_SNAPSHOTS at `ts`: QOS and account GrpTRES gres/gpu, and each partition's GPUs."""
        batch = CollectedBatch(source=f"{self.source} quotas")
        if self.rest is not None:
            qos = self.rest.get(f"/slurmdb/{self.api}/qos")
            batch.add("quota_snapshots", shapes.qos_snapshots(qos, cluster=self.cluster, ts=ts, source=self.source))
            assoc = self.rest.get(f"/slurmdb/{self.api}/associations", params={"cluster": self.cluster})
            frame = shapes.association_snapshots(assoc, cluster=self.cluster, ts=ts, source=self.source)
            batch.add("quota_snapshots", frame)
            batch.add("account_tree", shapes.association_tree(assoc, cluster=self.cluster, ts=ts, source=self.source))
            parts = self.rest.get(f"/slurm/{self.api}/partitions")
            batch.add(
                "quota_snapshots", shapes.partition_snapshots(parts, cluster=self.cluster, ts=ts, source=self.source)
            )
            return batch
        assert self.cli is not None
        text = self.cli.run("sacctmgr", ["-P", "show", "qos", "format=Name,GrpTRES,Priority"])
        qos = shapes.sacctmgr_qos_snapshots(text, cluster=self.cluster, ts=ts, source="sacctmgr show qos")
        batch.add("quota_snapshots", qos)
        text = self.cli.run("sacctmgr", assoc_args(self.cluster))
        snapshots, tree = read_assoc_tree(text.splitlines(), ts=ts, source="sacctmgr show assoc")
        batch.add("quota_snapshots", snapshots)
        batch.add("account_tree", tree)
        text = self.cli.run("scontrol", ["-o", "show", "partition"])
        batch.add(
            "quota_snapshots",
            shapes.scontrol_partition_snapshots(text, cluster=self.cluster, ts=ts, source="scontrol show partition"),
        )
        return batch

    def live_jobs(self) -> Any:
        """slurmctld's live jobs (`squeue --json` or `GET /slurm/vX/jobs`)."""
        if self.rest is not None:
            return self.rest.get(f"/slurm/{self.api}/jobs")
        assert self.cli is not None
        return self.cli.json("squeue", ["--json"])

    def usage(self, ts: datetime, *, tree: pl.DataFrame | None = None, live: Any = None) -> pl.DataFrame:
        """QUOTA_USAGE at `ts`: GPUs held by running jobs per QOS, account and partition; with the
        account tree (`quotas(ts)`'s ACCOUNT_TREE), an account counts its subtree, as its GrpTRES does."""
        live = self.live_jobs() if live is None else live
        return shapes.quota_usage(live, cluster=self.cluster, ts=ts, source=self.source, tree=tree)

    def pending(self, ts: datetime, *, live: Any = None) -> pl.DataFrame:
        """PENDING_JOBS at `ts`: the jobs waiting in the live queue and the reason each one waits."""
        live = self.live_jobs() if live is None else live
        return shapes.pending_jobs(live, cluster=self.cluster, ts=ts, source=self.source)
