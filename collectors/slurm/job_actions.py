"""Reclaim actions on Slurm jobs: cancel, requeue and suspend, through slurmrestd or the CLI.

slurmrestd v0.0.38 (Slurm 22.05) can only cancel or signal a job (`DELETE /slurm/v0.0.38/job/{id}`);
requeue and suspend are `scontrol requeue` and `scontrol suspend` (the latter needs an operator or
admin, and Slurm's suspend keeps the job's memory on the node: the site decides whether to allow it
by allowing the policy). The job's state is read first, so a retried action is idempotent: a job
that already ended is `already_ended`, a requeued job already waiting again or a suspended one is
`done` without a second call. An error from the call is checked against the state read afterwards:
a job that ended meanwhile is `already_ended` too.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.reclaim_actions import ActionResult, ReclaimTarget
from collectors.slurm.transport import SlurmCli, SlurmRest
from gpusteward.errors import PermanentError, StewardError, TransientError

LIVE = frozenset({"RUNNING", "PENDING", "SUSPENDED", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
                  "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"})
"""States of a job slurmctld still holds; anything else (or no answer) means it ended."""
_ALREADY = {"requeue": frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD"}), "suspend": frozenset({"SUSPENDED"})}
_COMMANDS = {"requeue": ("scontrol", "requeue"), "suspend": ("scontrol", "suspend"), "cancel": ("scancel",)}


@dataclass
class SlurmJobActions:
    """Reclaim actions on one Slurm cluster: cancel through `rest` when given, everything else through `cli`."""

    cli: SlurmCli | None = None
    rest: SlurmRest | None = None
    api: str = "v0.0.38"

    @property
    def transport(self) -> str:
        return "slurmrestd" if self.rest is not None else "scontrol"

    def _cli(self) -> SlurmCli:
        return self.cli if self.cli is not None else SlurmCli()

    def state(self, job_id: str) -> str | None:
        """The job's state as slurmctld holds it now; None when it no longer knows the job."""
        if self.rest is not None:
            try:
                data = self.rest.get(f"/slurm/{self.api}/job/{job_id}")
            except PermanentError:
                return None  # "invalid job id": slurmctld forgot it (MinJobAge)
            jobs = data.get("jobs") or []
            states = [str(j.get("job_state") or "") for j in jobs if isinstance(j, dict)]
            return states[0] if states else None
        try:
            out = self._cli().run("squeue", ["-h", "-j", job_id, "-o", "%T"]).strip()
        except StewardError:
            return None  # squeue: "Invalid job id specified" for a job slurmctld forgot
        return out.splitlines()[0].strip() if out else None

    def act(self, target: ReclaimTarget) -> ActionResult:
        if target.action not in _COMMANDS:
            raise PermanentError(f"Slurm cannot {target.action} a job (requeue, suspend or cancel)")
        job = target.job_id
        before = self.state(job)
        if before not in LIVE:
            return ActionResult("already_ended", self.transport, f"job {job} had ended ({before or 'gone'})")
        if before in _ALREADY.get(target.action, ()):
            return ActionResult("done", self.transport, f"job {job} is {before} already")
        use_rest = self.rest is not None and target.action == "cancel"
        try:
            if use_rest:
                assert self.rest is not None
                self.rest.delete(f"/slurm/{self.api}/job/{job}")
            else:
                command, *args = _COMMANDS[target.action]
                self._cli().run(command, [*args, job])
        except StewardError as exc:
            after = self.state(job)
            if after not in LIVE:
                return ActionResult("already_ended", self.transport, f"job {job} ended meanwhile ({after or 'gone'})")
            kind = TransientError if isinstance(exc, TransientError) else PermanentError
            raise kind(f"{target.action} of job {job}: {exc}") from exc
        via = f"{self.rest.where} DELETE" if use_rest and self.rest else " ".join(_COMMANDS[target.action])
        return ActionResult("done", "slurmrestd" if use_rest else "scontrol", f"{target.action} of job {job} ({via})")
