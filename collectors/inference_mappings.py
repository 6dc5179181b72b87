"""How each inference server names its metrics: one `InferenceMapping` per server.

The window builder (`collectors/inference.py`) reads any server through its mapping, so adding a
server is data, not code: the built-ins below are written exactly as a user's mapping from the
config is (`inference.mappings` in docs/config.md).

A mapping names histograms by their base name (the `_bucket`, `_sum` and `_count` samples are
derived), counters by the sample name as exposed (TGI and Triton counters have no `_total`; both
spellings are listed where exporters differ), and selects requests and errors with label
conditions. A server with no error signal gets `errors = null` in its windows, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpusteward.config.inference import InferenceMappingConfig, parse_selector
from gpusteward.config.schema import Config


@dataclass(frozen=True)
class Selector:
    """Samples of one name whose labels meet every condition.

    `labels`: label -> allowed values; `present`: labels that must be set and non-empty.
    """

    name: str
    labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    present: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, allowed in self.labels.items():
            if labels.get(key) not in allowed:
                return False
        return all(labels.get(key) for key in self.present)


@dataclass(frozen=True)
class InferenceMapping:
    server: str
    service_labels: tuple[str, ...]  # the first of these labels that is set names the service
    e2e: tuple[str, ...] = ()  # end-to-end latency histogram base names (any one present)
    ttft: tuple[str, ...] = ()  # time-to-first-token histogram base names
    latency_scale: float = 1.0  # seconds per unit of the histograms' bounds and sums
    requests: tuple[Selector, ...] = ()  # finished requests; empty: the e2e histogram's _count
    errors: tuple[Selector, ...] = ()  # failed requests; empty: the server reports none
    prompt_tokens: tuple[Selector, ...] = ()  # cumulative token counts (a counter or a histogram _sum)
    generation_tokens: tuple[Selector, ...] = ()
    running: tuple[str, ...] = ()  # gauges
    waiting: tuple[str, ...] = ()
    kv_cache: tuple[str, ...] = ()  # KV-cache use as a ratio 0..1
    default_service: str | None = None  # for servers without a model label (TGI serves one model)

    def service_of(self, labels: Mapping[str, str]) -> str | None:
        for key in self.service_labels:
            value = labels.get(key)
            if value:
                return value
        return self.default_service


def _sel(*names: str, **labels: Iterable[str]) -> tuple[Selector, ...]:
    conditions = {k: frozenset(v) for k, v in labels.items()}
    return tuple(Selector(n, conditions) for n in names)


VLLM = InferenceMapping(
    server="vllm",
    service_labels=("model_name",),
    e2e=("vllm:e2e_request_latency_seconds",),
    ttft=("vllm:time_to_first_token_seconds",),
    requests=_sel("vllm:request_success_total"),
    # `error` is newer vLLM's retryable internal error (always a 500); `abort` is a dropped request.
    errors=_sel("vllm:request_success_total", finished_reason=("abort", "error")),
    prompt_tokens=_sel("vllm:prompt_tokens_total"),
    generation_tokens=_sel("vllm:generation_tokens_total"),
    running=("vllm:num_requests_running",),
    waiting=("vllm:num_requests_waiting",),
    kv_cache=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # renamed in vLLM 0.9
)

SGLANG = InferenceMapping(
    server="sglang",
    service_labels=("model_name",),
    e2e=("sglang:e2e_request_latency_seconds",),
    ttft=("sglang:time_to_first_token_seconds",),
    requests=(),  # the e2e histogram's count: every SGLang version has it
    errors=_sel("sglang:num_aborted_requests_total"),  # newer SGLang only
    prompt_tokens=_sel("sglang:prompt_tokens_total"),
    generation_tokens=_sel("sglang:generation_tokens_total"),
    running=("sglang:num_running_reqs",),
    waiting=("sglang:num_queue_reqs",),
    kv_cache=("sglang:token_usage",),
)

TGI = InferenceMapping(
    server="tgi",
    service_labels=("model_name", "model"),
    default_service="tgi",
    e2e=("tgi_request_duration",),
    ttft=(),
    requests=_sel("tgi_request_count", "tgi_request_count_total"),
    errors=_sel("tgi_request_failure", "tgi_request_failure_total"),
    prompt_tokens=_sel("tgi_request_input_length_sum"),
    generation_tokens=_sel("tgi_request_generated_tokens_sum"),
    running=("tgi_batch_current_size",),
    waiting=("tgi_queue_size",),
)

# Triton exposes no end-to-end histogram (only cumulative microsecond counters and, opt-in,
# summaries that cannot be aggregated); its first-response histogram is in milliseconds.
TRITON = InferenceMapping(
    server="triton",
    service_labels=("model",),
    ttft=("nv_inference_first_response_histogram_ms",),
    latency_scale=0.001,
    requests=_sel("nv_inference_request_success", "nv_inference_request_failure"),
    errors=_sel("nv_inference_request_failure"),
    waiting=("nv_inference_pending_request_count",),
)

GATEWAY_INFERENCE_EXTENSION = InferenceMapping(
    server="gateway-api-inference-extension",
    service_labels=("model_name", "target_model_name"),
    e2e=("inference_objective_request_duration_seconds", "inference_model_request_duration_seconds"),
    ttft=("inference_objective_request_ttft_seconds", "inference_model_request_ttft_seconds"),
    requests=_sel("inference_objective_request_total", "inference_model_request_total"),
    errors=_sel("inference_objective_request_error_total", "inference_model_request_error_total"),
    prompt_tokens=_sel("inference_objective_input_tokens_sum", "inference_model_input_tokens_sum"),
    generation_tokens=_sel("inference_objective_output_tokens_sum", "inference_model_output_tokens_sum"),
    running=("inference_objective_running_requests", "inference_model_running_requests"),
)

ENVOY_AI_GATEWAY = InferenceMapping(
    server="envoy-ai-gateway",
    service_labels=("gen_ai_request_model", "gen_ai_original_model", "gen_ai_response_model"),
    e2e=("gen_ai_server_request_duration_seconds",),
    ttft=("gen_ai_server_time_to_first_token_seconds",),
    requests=(),  # every request, failed or not, lands in the duration histogram
    errors=(Selector("gen_ai_server_request_duration_seconds_count", present=frozenset({"error_type"})),),
    prompt_tokens=_sel("gen_ai_client_token_usage_sum", gen_ai_token_type=("input",)),
    generation_tokens=_sel("gen_ai_client_token_usage_sum", gen_ai_token_type=("output",)),
)

BUILT_IN: tuple[InferenceMapping, ...] = (VLLM, SGLANG, TGI, TRITON, GATEWAY_INFERENCE_EXTENSION, ENVOY_AI_GATEWAY)


class MappingIndex:
    """Sample name -> the mappings that use it, for the window builder and file detection."""

    def __init__(self, mappings: Iterable[InferenceMapping] = BUILT_IN) -> None:
        self.mappings = tuple(mappings)
        self._by_name: dict[str, list[InferenceMapping]] = {}
        for mapping in self.mappings:
            for name in sample_names(mapping):
                self._by_name.setdefault(name, []).append(mapping)

    def mappings_for(self, name: str) -> list[InferenceMapping]:
        return self._by_name.get(name, [])

    def knows(self, name: str) -> bool:
        return name in self._by_name


def sample_names(mapping: InferenceMapping) -> set[str]:
    names: set[str] = set()
    for base in (*mapping.e2e, *mapping.ttft):
        names |= {f"{base}_bucket", f"{base}_sum", f"{base}_count"}
    for selectors in (mapping.requests, mapping.errors, mapping.prompt_tokens, mapping.generation_tokens):
        names |= {s.name for s in selectors}
    return names | set(mapping.running) | set(mapping.waiting) | set(mapping.kv_cache)


def from_config(entry: InferenceMappingConfig) -> InferenceMapping:
    """One `[[inference.mappings]]` entry of the config as a mapping (its selectors already checked)."""

    def selectors(texts: list[str]) -> tuple[Selector, ...]:
        parsed = [parse_selector(t) for t in texts]
        return tuple(Selector(p.name, dict(p.labels), p.present) for p in parsed)

    return InferenceMapping(
        server=entry.server,
        service_labels=tuple(entry.service_labels),
        default_service=entry.default_service,
        e2e=tuple(entry.e2e),
        ttft=tuple(entry.ttft),
        latency_scale=entry.latency_scale,
        requests=selectors(entry.requests),
        errors=selectors(entry.errors),
        prompt_tokens=selectors(entry.prompt_tokens),
        generation_tokens=selectors(entry.generation_tokens),
        running=tuple(entry.running),
        waiting=tuple(entry.waiting),
        kv_cache=tuple(entry.kv_cache),
    )


def mapping_index(config: Config | None) -> MappingIndex:
    """The built-ins plus the config's `inference.mappings` (one with a built-in's server name replaces it)."""
    if config is None or not config.inference.mappings:
        return DEFAULT_INDEX
    own = [from_config(entry) for entry in config.inference.mappings]
    names = {m.server for m in own}
    return MappingIndex([*(m for m in BUILT_IN if m.server not in names), *own])


DEFAULT_INDEX = MappingIndex()
