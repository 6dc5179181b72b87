"""Which online-inference job records serve which service: the configured `[[inference.service_jobs]]` rules.

A scheduler record does not say which model server it runs; the platform's convention does (a job
name pattern, a partition or account per service, a namespace or labels on Kubernetes). The rules
say it, in order, first match wins. Nothing is assumed without a rule: with none, no job is tied to
a service and the figures that need it (gpus_serving) say so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

from gpusteward.config.inference import ServiceJobRule


def _whole_word(service: str) -> re.Pattern[str]:
    names = {service, service.rsplit("/", 1)[-1]}
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)


def _glob(pattern: str | None, value: Any) -> bool:
    return pattern is None or (value is not None and fnmatchcase(str(value), pattern))


_GLOBBED = ("cluster", "partition", "account", "qos", "namespace")


class ServiceMatcher:
    """Compiled rules over the known services; `service_of(job)` takes a JOBS row as a dict."""

    def __init__(self, rules: Sequence[ServiceJobRule], services: Sequence[str]) -> None:
        self.rules = [(r, re.compile(r.job_name) if r.job_name else None) for r in rules]
        self.known = sorted(((s, _whole_word(s)) for s in services), key=lambda p: len(p[0]), reverse=True)

    def _conditions(self, rule: ServiceJobRule, job: dict[str, Any]) -> bool:
        if not all(_glob(getattr(rule, f), job.get(f)) for f in _GLOBBED):
            return False
        labels = job.get("labels") or {}
        return all(k in labels and fnmatchcase(str(labels[k]), v) for k, v in rule.labels.items())

    def service_of(self, job: dict[str, Any]) -> str | None:
        for rule, pattern in self.rules:
            if not self._conditions(rule, job):
                continue
            found = pattern.search(job.get("name") or "") if pattern is not None else None
            if pattern is not None and found is None:
                continue
            if rule.service is not None:
                return rule.service
            if found is not None and "service" in found.re.groupindex and found.group("service"):
                return found.group("service")
            if rule.name_has_service:
                text = f"{job.get('name') or ''} {job.get('comment') or ''}"
                return next((s for s, p in self.known if p.search(text)), None)
            return None
        return None
