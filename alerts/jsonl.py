"""JSONL notifier: appends one JSON object per alert to a file, once per (fingerprint, status).

Running the same evaluation twice appends nothing the second time; an episode that resolves
later appends its resolved record next to the firing one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from alerts.model import Alert
from gpusteward.errors import PermanentError


class JsonlNotifier:
    def __init__(self, name: str, path: str | Path) -> None:
        self._name = name
        self.path = Path(path)

    @property
    def name(self) -> str:
        return self._name

    def _seen(self) -> set[tuple[str, str]]:
        if not self.path.exists():
            return set()
        seen: set[tuple[str, str]] = set()
        with self.path.open(encoding="utf-8") as fh:
            for raw in fh:
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError:
                    continue  # a torn last line from a crash is not ours to repair
                if isinstance(record, dict):
                    seen.add((str(record.get("fingerprint")), str(record.get("status"))))
        return seen

    def _ends_torn(self) -> bool:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return False
        with self.path.open("rb") as fh:
            fh.seek(-1, 2)
            return fh.read(1) != b"\n"

    def send(self, alerts: Sequence[Alert]) -> int:
        try:
            seen = self._seen()
            lines = []
            for alert in alerts:
                key = (alert.fingerprint, alert.status)
                if key in seen:
                    continue
                seen.add(key)
                lines.append(json.dumps({"receiver": self._name, **alert.to_dict()}, ensure_ascii=False))
            if lines:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # A torn last line (a crash mid-write) must not swallow the first new record.
                lead = "\n" if self._ends_torn() else ""
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(lead + "".join(line + "\n" for line in lines))
        except OSError as exc:
            raise PermanentError(f"receiver {self._name!r}: cannot write {self.path}: {exc.strerror or exc}") from exc
        return len(lines)
