# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""Inference-server mappings of the config: a server the built-ins do not know, without code.

Each `[[inference.mappings]]` entry mirrors `collectors.inference_mappings.InferenceMapping`.
Counter roles (requests, errors, prompt and generation tokens) are selectors written as PromQL
writes them: `name`, `name{label="v"}`, `name{label=~"a|b"}` (alternatives of literal values)
or `name{label!=""}` (the label must be set). A mapping whose `server` equals a built-in's
replaces that built-in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusteward.config.fields import opt, req

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_REGEX_META = re.compile(r"[.*+?()\[\]{}^$\\]")


@dataclass(frozen=True)
class ParsedSelector:
    name: str
    labels: dict[str, frozenset[str]]  # label -> allowed values
    present: frozenset[str]  # labels that must be set


def parse_selector(text: str) -> ParsedSelector:
    """`name{label="v",other=~"a|b",set!=""}` -> its parts; raises ValueError saying what is wrong."""
    text = text.strip()
    name, brace, rest = text.partition("{")
    name = name.strip()
    if not _NAME.fullmatch(name):
        raise ValueError(f'{text!r}: expected a metric name, then optionally {{label="value", ...}}')
    labels: dict[str, frozenset[str]] = {}
    present: set[str] = set()
    if brace:
        if not rest.rstrip().endswith("}"):
            raise ValueError(f"{text!r}: missing the closing brace")
        body = rest.rstrip()[:-1].strip()
        pos = 0
        while pos < len(body):
            m = _MATCHER.match(body, pos)
            if m is None:
                raise ValueError(f'{text!r}: expected label="value", label=~"a|b" or label!="" at {body[pos:]!r}')
            key, op, value = m.group(1), m.group(2), m.group(3)
            if key in labels or key in present:
                raise ValueError(f"{text!r}: label {key!r} given twice")
            if op == "!=":
                if value:
                    raise ValueError(f'{text!r}: only label!="" (the label is set) is supported')
                present.add(key)
            elif op == "=~":
                options = value.split("|")
                if any(not o or _REGEX_META.search(o) for o in options):
                    raise ValueError(f'{text!r}: =~ takes literal alternatives "a|b", not a regular expression')
                labels[key] = frozenset(options)
            else:
                labels[key] = frozenset({value})
            pos = m.end()
    return ParsedSelector(name, labels, frozenset(present))


@dataclass(frozen=True)
class InferenceMappingConfig:
    server: str = req("name of the server kind (a built-in's name replaces that built-in)")
    service_labels: list[str] = opt([], "labels naming the service (model); the first one set wins")
    default_service: str | None = opt(None, "service of samples without any service label (one-model servers)")
    e2e: list[str] = opt([], "end-to-end latency histogram base names (without _bucket); any one present")
    ttft: list[str] = opt([], "time-to-first-token histogram base names")
    latency_scale: float = opt(1.0, "seconds per unit of the histograms' bounds and sums (0.001 for ms)")
    requests: list[str] = opt(
        [], 'finished-request counters as selectors, e.g. name{outcome="done"}; empty: the e2e histogram count'
    )
    errors: list[str] = opt([], 'failed-request counters as selectors, e.g. name{status="error"}; empty: none')
    prompt_tokens: list[str] = opt([], "cumulative prompt-token counters (or a histogram _sum) as selectors")
    generation_tokens: list[str] = opt([], "cumulative generated-token counters as selectors")
    running: list[str] = opt([], "gauges of running requests")
    waiting: list[str] = opt([], "gauges of waiting (queued) requests")
    kv_cache: list[str] = opt([], "gauges of KV-cache use as a ratio 0..1")


@dataclass(frozen=True)
class ServiceJobRule:
    """Which scheduler jobs serve which inference service; conditions all hold, the first rule that matches wins."""

    service: str | None = opt(
        None, "the service the matched jobs serve; unset: the (?P<service>...) group of job_name, else name_has_service"
    )
    job_name: str | None = opt(None, "regular expression searched in the job name; may capture (?P<service>...)")
    name_has_service: bool = opt(
        False, "the job serves the known service whose name (or its part after the last /) is a whole word of the "
        "job's name or comment; the longest wins"
    )
    cluster: str | None = opt(None, "glob on the cluster")
    partition: str | None = opt(None, "glob on the Slurm partition")
    account: str | None = opt(None, "glob on the Slurm account")
    qos: str | None = opt(None, "glob on the Slurm QOS")
    namespace: str | None = opt(None, "glob on the Kubernetes namespace (records without one never match)")
    labels: dict[str, str] = opt({}, "label globs that must all match (records without labels never match)")


@dataclass(frozen=True)
class InferenceConfig:
    mappings: list[InferenceMappingConfig] = opt(
        [], "metric mappings of inference servers beyond the built-ins (docs/collectors.md#inference)"
    )
    service_jobs: list[ServiceJobRule] = opt(
        [], "rules tying online-inference jobs to the services they serve (GPUs per service); none: not tied"
    )


SELECTOR_ROLES = ("requests", "errors", "prompt_tokens", "generation_tokens")
