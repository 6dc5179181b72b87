"""Slurm `QuotaWriter`s: GrpTRES gres/gpu on a QOS or an account association, via sacctmgr or slurmrestd."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collectors.slurm.gpu_request import gpu_in_tres
from collectors.slurm.shapes import gpu_in_tres_list
from collectors.slurm.transport import SlurmCli, SlurmRest
from collectors.slurm.writes import QuotaChange, QuotaTarget, guarded_write
from gpusteward.errors import InputError, PermanentError

_KINDS = ("qos", "account")


def _check(target: QuotaTarget) -> None:
    if target.kind not in _KINDS:
        raise PermanentError(f"Slurm holds GPU limits on {' and '.join(_KINDS)}, not on {target.kind!r}")
    if target.kind == "account" and not target.cluster:
        raise PermanentError(f"{target}: an account association needs a cluster")


@dataclass
class SacctmgrQuotaWriter:
    """GrpTRES through `sacctmgr -P show` and `sacctmgr -i modify ... set GrpTRES=gres/gpu=N` (-1 clears)."""

    cli: SlurmCli

    @property
    def transport(self) -> str:
        return "sacctmgr"

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        _check(target)
        if target.kind == "qos":
            text = self.cli.run("sacctmgr", ["-P", "-n", "show", "qos", f"name={target.name}", "format=Name,GrpTRES"])
            rows = [line.split("|") for line in text.splitlines() if line.strip()]
            rows = [r for r in rows if r[0] == target.name]
        else:
            args = [
                "-P",
                "-n",
                "show",
                "assoc",
                f"account={target.name}",
                f"cluster={target.cluster}",
                "format=Account,User,Partition,GrpTRES",
            ]
            text = self.cli.run("sacctmgr", args)
            rows = [line.split("|") for line in text.splitlines() if line.strip()]
            rows = [[r[0], r[3]] for r in rows if len(r) >= 4 and r[0] == target.name and not r[1] and not r[2]]
        if len(rows) != 1:
            raise PermanentError(f"sacctmgr: {target} not found ({len(rows)} matching rows)")
        return gpu_in_tres(rows[0][1])

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        def write(_current: int | None, value: int | None) -> str:
            setting = f"GrpTRES=gres/gpu={-1 if value is None else value}"
            if target.kind == "qos":
                args = ["-i", "modify", "qos", "where", f"name={target.name}", "set", setting]
            else:
                args = [
                    "-i",
                    "modify",
                    "account",
                    "where",
                    f"name={target.name}",
                    f"cluster={target.cluster}",
                    "set",
                    setting,
                ]
            return self.cli.run("sacctmgr", args).strip()

        return guarded_write(self, target, expected=expected, new=new, write=write)


@dataclass
class RestQuotaWriter:
    """GrpTRES through slurmrestd's dbv0.0.38: QOS `limits.max.tres.total`, association `max.tres.total`.

    Read-modify-write: the whole record read is posted back with only the GPU entry changed
    (early 22.05 zeroed limits missing from an update). Slurm 22.05 wants the body key `QOS`, not
    the `qos` its OpenAPI spec documents; newer releases take `qos`.
    """

    rest: SlurmRest
    api: str = "v0.0.38"

    @property
    def transport(self) -> str:
        return f"{self.rest.where} dbv{self.api.removeprefix('v')}"

    @property
    def _qos_key(self) -> str:
        return "QOS" if self.api == "v0.0.38" else "qos"

    def _record(self, target: QuotaTarget) -> dict[str, Any]:
        _check(target)
        if target.kind == "qos":
            data = self.rest.get(f"/slurmdb/{self.api}/qos/{target.name}")
            records = data.get(self._qos_key) or data.get("qos") or data.get("QOS") or []
            records = [r for r in records if r.get("name") == target.name]
        else:
            params = {"account": target.name, "cluster": str(target.cluster)}
            data = self.rest.get(f"/slurmdb/{self.api}/associations", params=params)
            records = [
                r
                for r in data.get("associations") or []
                if r.get("account") == target.name and not r.get("user") and not r.get("partition")
            ]
        if len(records) != 1:
            raise PermanentError(f"{self.transport}: {target} not found ({len(records)} matching records)")
        record: dict[str, Any] = records[0]
        return record

    @staticmethod
    def _total(record: dict[str, Any], kind: str) -> list[Any]:
        limits = record.setdefault("limits", {}) if kind == "qos" else record
        tres = limits.setdefault("max", {}).setdefault("tres", {})
        total = tres.setdefault("total", [])
        if not isinstance(total, list):
            raise InputError("slurmrestd", f"max.tres.total is {type(total).__name__}, not a list")
        return total

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        try:
            return gpu_in_tres_list(self._total(self._record(target), target.kind))
        except (TypeError, ValueError) as exc:
            raise InputError("slurmrestd", f"{target}: GPU limit not readable: {exc}") from exc

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        if target.kind == "account" and self.api == "v0.0.38":
            raise PermanentError(
                f"{self.transport}: cannot set GrpTRES on {target}: Slurm 22.05's POST /associations answers 200 "
                "but leaves an account association unchanged (seen on 22.05.8); use SacctmgrQuotaWriter"
            )

        def write(_current: int | None, value: int | None) -> str:
            record = self._record(target)
            total = [
                t for t in self._total(record, target.kind) if not (t.get("type") == "gres" and t.get("name") == "gpu")
            ]
            total.append({"type": "gres", "name": "gpu", "count": -1 if value is None else value})
            self._total(record, target.kind)[:] = total
            if target.kind == "qos":
                self.rest.post(f"/slurmdb/{self.api}/qos", {self._qos_key: [record]})
            else:  # `usage` and unset fields are read-only or cannot be parsed back
                body = {k: v for k, v in record.items() if v is not None and k not in ("usage", "id", "accounting")}
                body["user"] = record.get("user") or ""  # required key; empty = the account's own association
                self.rest.post(f"/slurmdb/{self.api}/associations", {"associations": [body]})
            return "posted"

        return guarded_write(self, target, expected=expected, new=new, write=write)
