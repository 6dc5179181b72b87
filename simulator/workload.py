"""What users submit: job streams per cluster, grounded in docs of the public traces.

Sources (../shared/notes/workload-realism.md, section 4): job sizes with median 1 GPU (item 1),
lognormal run times with the short eval and training medians (item 2), final states about
60/15/25 by count with failures early and cancellations growing with run time (item 4). Queue
waits are not drawn here: they come out of `scheduler.py`. Stream rates, eval sweeps and notebook
behaviour are assumptions (see docs/simulator.md).

Long pre-training runs are chained multi-node jobs (2-16 nodes where the cluster has room) whose
stages ask for up to 10 days: Acme's longest GPU job ran 14 days on Seren and 7.2 on Kalos, Philly's
and Helios' about 50 (acme/cluster_summary.csv `max_run_time_gpu` [A]); jobs of 8 GPUs or more hold
20-100% of GPU time in the public traces (issue 20; Kalos' mean of 26.8 GPUs per job with a median
of 1 [A] needs exactly such a tail). Users stop long stages themselves more often than anything
else ends them: in Acme and Helios cancelled jobs hold 39-66% of GPU time while being 6-27% of jobs
[A], so P(cancel) grows with the run's length. Users also give up on jobs that wait: a third of
batch users cancel a job still pending after a few hours, notebook users after a quarter of an
hour (assumption; the traces count cancelled jobs but do not say whether they had started).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from simulator.failures import NCCL_ABORT, failure_cause
from simulator.fleet import GPUS_PER_NODE, PARTITION_MAX_MIN, SERVICE_USER, USERS, Cluster
from simulator.inference import Replica
from simulator.jobs import Filler, JobSpec
from simulator.plan import DAY_S, HOUR_S, LOCAL_OFFSET_S, Plan

# Submissions by local hour (Asia/Shanghai): office hours dominate, nights are quiet.
# fmt: off
_HOUR_WEIGHTS = np.array(
    [0.3, 0.2, 0.15, 0.1, 0.1, 0.15, 0.3, 0.6, 1.0, 1.6, 1.8, 1.7, 1.3, 1.5, 1.8, 1.8, 1.7, 1.5, 1.2, 1.0, 1.0, 0.9,
     0.7, 0.5]
)
# fmt: on
_HOUR_WEIGHTS = _HOUR_WEIGHTS / _HOUR_WEIGHTS.mean()
# Failure share by kind; the rest of the 25% "failed" by count comes from TIMEOUT and NODE_FAIL.
_FAIL = {
    "train": 0.26,
    "bigrun": 0.1,
    "urgent": 0.05,
    "finetune": 0.2,
    "eval": 0.28,
    "sweep": 0.15,
    "batch": 0.15,
    "general": 0.28,
    "scavenger": 0.15,
}


@dataclass(frozen=True)
class Stream:
    kind: str
    partition: str
    qos: str
    accounts: tuple[tuple[str, float], ...]
    per_day: float  # weekday submissions (or bursts) per day for the reference capacity
    sizes: tuple[tuple[int, float], ...]
    median_min: float
    sigma: float
    weekend: float = 0.5
    burst: tuple[int, int] | None = None
    # Whole-node jobs from `min_nodes` up to the cluster (`sizes` unused): see `scale_out_sizes`.
    min_nodes: int | None = None


# fmt: off
_ALL = (("nlp", 0.3), ("vision", 0.3), ("speech", 0.2), ("research", 0.2))
# West is the training cluster: vision's chained long runs keep half of it busy around the clock,
# the rest is shared, and low-QOS evaluation gets what is left, so it waits there.
WEST = (
    Stream("train", "train", "normal", (("nlp", 0.4), ("vision", 0.15), ("speech", 0.3), ("research", 0.15)), 30,
           ((1, 0.5), (2, 0.3), (4, 0.2)), 15, 1.8),
    Stream("bigrun", "train", "normal", (("nlp", 1.0),), 0.15, ((8, 1.0),), 12 * 60, 0.45, 0.9),
    Stream("urgent", "train", "high", (("nlp", 1.0),), 0.15, ((4, 0.4), (8, 0.4), (16, 0.2)), 5 * 60, 0.4),
    Stream("finetune", "finetune", "normal", (("vision", 0.3), ("nlp", 0.4), ("speech", 0.3)), 8,
           ((1, 0.35), (2, 0.4), (4, 0.25)), 120, 0.9),
    Stream("eval", "eval", "low", _ALL, 30, ((1, 1.0),), 2, 1.5),
    Stream("sweep", "eval", "low", (("vision", 0.6), ("nlp", 0.4)), 1.5, ((2, 0.3), (4, 0.45), (8, 0.25)), 40, 0.5,
           0.5, (12, 30)),
    Stream("notebook", "interactive", "high", (("nlp", 0.4), ("speech", 0.3), ("vision", 0.3)), 1.5,
           ((1, 1.0),), 60, 0.6),
    Stream("general", "general", "normal", (("speech", 0.5), ("research", 0.3), ("platform", 0.2)), 6,
           ((1, 0.8), (2, 0.2)), 30, 1.5),
    Stream("batch", "batch", "normal", (("platform", 1.0),), 1.0, ((1, 0.5), (2, 0.5)), 45, 0.8),
    # Distributed runs across whole nodes (scaling tests, short multi-node training); the long ones are chains.
    Stream("bigrun", "train", "high", (("nlp", 0.5), ("speech", 0.25), ("research", 0.25)), 0.15, (), 60, 0.8,
           0.3, min_nodes=2),
)
# Chained long runs: (account, smallest size in GPUs, share of the cluster's GPUs, stage limit minutes).
WEST_CHAINS = (("vision", 8, 0.5, 10 * 24 * 60),)
# East shares its first hosts with online inference; the rest is mixed, lighter work.
EAST = (
    Stream("notebook_idle", "interactive", "high", (("research", 1.0),), 2.6, ((1, 1.0),), 6.5 * 60, 0.35, 0.2),
    Stream("notebook", "interactive", "high", (("nlp", 0.35), ("vision", 0.25), ("speech", 0.25),
           ("platform", 0.15)), 5, ((1, 1.0),), 60, 0.6),
    Stream("train", "train", "normal", (("nlp", 0.45), ("speech", 0.25), ("research", 0.2), ("vision", 0.1)), 26,
           ((1, 0.5), (2, 0.3), (4, 0.2)), 15, 1.8),
    Stream("urgent", "train", "high", (("nlp", 1.0),), 0.15, ((4, 1.0),), 5 * 60, 0.4),
    Stream("finetune", "finetune", "normal", (("nlp", 0.5), ("speech", 0.3), ("vision", 0.2)), 8,
           ((1, 0.35), (2, 0.4), (4, 0.25)), 120, 0.9),
    Stream("eval", "eval", "normal", _ALL, 14, ((1, 1.0),), 2, 1.5),
    Stream("sweep", "eval", "normal", (("nlp", 0.6), ("speech", 0.4)), 0.5, ((1, 0.5), (2, 0.5)), 20, 0.5, 0.5, (3, 6)),
    Stream("batch", "batch", "normal", (("platform", 0.5), ("nlp", 0.3), ("speech", 0.2)), 7, ((1, 0.6), (2, 0.4)),
           45, 0.8),
    Stream("general", "general", "normal", (("speech", 0.45), ("research", 0.45), ("platform", 0.1)), 12,
           ((1, 0.8), (2, 0.2)), 30, 1.5),
)
EAST_CHAINS = (("nlp", 4, 0.125, 10 * 24 * 60),)
# Notebooks that ask for a shard of the time-sliced node (`--gres=shard:1`, fleet.SHARED_*): one such
# node per fleet, so the stream is not scaled with the fleet; about 1.3 sessions at a time on its
# eight shards, several in the working hours.
SHARD_NOTEBOOKS = Stream("notebook", "interactive", "high", (("nlp", 0.3), ("vision", 0.25), ("speech", 0.25),
                         ("platform", 0.2)), 36, ((1, 1.0),), 60, 0.6, 0.6)
# Multi-node chains take 2-16 whole nodes, at most a quarter of the cluster each.
CHAIN_SIZES = (128, 64, 32, 16)
MAX_JOB_NODES = 16  # the issue's 2-16 nodes; the traces' largest jobs are 128-2,048 GPUs
# Users who cancel a job that is still pending: share of jobs, median patience (s), sigma.
PATIENCE = {"notebook": (1.0, 15 * 60, 0.5), "notebook_idle": (1.0, 15 * 60, 0.5)}
DEFAULT_PATIENCE = (0.35, 3 * HOUR_S, 1.0)
# PreemptType=preempt/qos, PreemptMode=REQUEUE: low is the scavenger QOS, preempted by everything.
PREEMPTS = {"high": frozenset({"low"}), "normal": frozenset({"low"}), "low": frozenset(), "inference": frozenset()}
# Share of a serving cluster's GPUs the batch-like partitions leave to notebooks (east has no
# scavenger work for notebooks to preempt; west does).
INTERACTIVE_HEADROOM = 0.06
RELEASE_KEY = 999  # the planted release run, so the manifest can find its record
REFERENCE_GPUS = {"east": 14, "west": 12}  # free GPUs each stream table was sized for
# fmt: on

# fmt: off
_NAMES: dict[str, tuple[str, ...] | dict[str, tuple[str, ...]]] = {
    "bigrun": {"vision": ("vit-h14-pretrain", "sam-large-pretrain", "dino-v2-g"), "nlp": ("llm-13b-pretrain",
               "llm-7b-continued")},
    "train": ("resnet-ablation", "asr-conformer", "tts-vits", "lm-small", "seg-upernet", "detr-coco", "moe-proto"),
    "urgent": ("llm-hotfix-run", "release-candidate-train"),
    "finetune": ("sft-llama3-8b", "lora-qwen2-7b", "whisper-ft", "clip-ft"),
    "eval": ("eval-mmlu", "eval-ckpt", "eval-wer", "eval-coco"),
    "sweep": ("eval-sweep-ckpt", "eval-harness"),
    "notebook": ("jupyter", "bash", "vscode-tunnel"),
    "notebook_idle": ("jupyter", "jupyter-lab"),
    "general": ("feature-extract", "data-prep", "embed-corpus", "augment"),
    "batch": ("batch-infer-llm", "batch-embed", "nightly-scoring"),
    "scavenger": ("hpo-trial", "rl-rollout"),
}
# fmt: on


def _arrivals(rng: np.random.Generator, plan: Plan, per_day: float, weekend: float) -> np.ndarray:
    """Submission times: Poisson per hour, weighted by the local hour and the local weekday."""
    t0 = plan.sim_start_s
    hours = np.arange(t0, plan.end_s, HOUR_S, dtype=np.int64)
    local = hours + LOCAL_OFFSET_S
    weekday = ((local // DAY_S) + 3) % 7
    rate = per_day / 24 * _HOUR_WEIGHTS[(local % DAY_S) // HOUR_S] * np.where(weekday >= 5, weekend, 1.0)
    n = rng.poisson(rate)
    starts = np.repeat(hours, n)
    return np.sort(starts + rng.integers(0, HOUR_S, len(starts)))


def _pick(rng: np.random.Generator, options: tuple[tuple[int, float], ...] | tuple[tuple[str, float], ...]) -> int:
    weights = np.array([w for _, w in options])
    return int(rng.choice(len(options), p=weights / weights.sum()))


def outcome(
    rng: np.random.Generator, kind: str, work_s: int, limit_s: int, gpus: int = 1
) -> tuple[int, str, tuple[int, int]]:
    """Run time, final state and the exit code of a failure: failures early in the run (a hung
    collective anywhere in it), cancels likelier for long runs (simulator.failures for the codes)."""
    if kind.startswith("notebook"):
        if work_s >= limit_s:
            return limit_s, "TIMEOUT", (0, 0)
        return work_s, ("CANCELLED" if rng.random() < 0.12 else "COMPLETED"), (0, 0)
    u = rng.random()
    p_fail = _FAIL[kind]
    p_cancel = 0.07 + 0.3 * min(1.0, max(0.0, math.log10(max(work_s, 1) / 300) / 2.5))
    if u < p_fail:
        cause = failure_cause(rng, gpus)
        share = rng.uniform(0.1, 1.0) if cause == NCCL_ABORT else rng.beta(0.7, 3.0)
        return min(limit_s, max(20, int(work_s * share))), "FAILED", cause
    if u < p_fail + p_cancel:
        run = max(20, int(work_s * rng.uniform(0.3, 1.0)))
        return ((limit_s, "TIMEOUT") if run >= limit_s else (run, "CANCELLED")) + ((0, 0),)
    return ((limit_s, "TIMEOUT") if work_s >= limit_s else (work_s, "COMPLETED")) + ((0, 0),)


def stage_outcome(rng: np.random.Generator, limit_s: int, gpus: int) -> tuple[int, str, tuple[int, int]]:
    """A chained pre-training stage: it checkpoints and runs until its time limit (TIMEOUT, and the
    workflow submits the next stage) unless it fails (20%: the infrastructure failures large jobs
    meet most, Acme [S]) or its user stops it to change something (45%, anywhere in the stage:
    cancelled jobs hold most of Acme's and Helios' GPU time [A])."""
    u = rng.random()
    if u < 0.2:
        cause = failure_cause(rng, gpus)
        share = rng.uniform(0.05, 1.0) if cause == NCCL_ABORT else rng.beta(0.7, 3.0)
        return max(60, int(limit_s * share)), "FAILED", cause
    if u < 0.65:
        return max(60, int(limit_s * rng.uniform(0.1, 1.0))), "CANCELLED", (0, 0)
    return limit_s, "TIMEOUT", (0, 0)


def _array_task(stream: int, i: int, burst_of: np.ndarray | None, burst_start: np.ndarray) -> tuple[int, int] | None:
    """(array key, task index) of the i-th job of a sweep stream; None outside sweeps."""
    if burst_of is None:
        return None
    burst = int(burst_of[i])
    return stream * 100_000 + burst, i - int(burst_start[burst])


def patience(rng: np.random.Generator, kind: str) -> int | None:
    """How long the user waits for a pending job before cancelling it (None: never cancels)."""
    share, median_s, sigma = PATIENCE.get(kind, DEFAULT_PATIENCE)
    draw = rng.random()
    wait = int(median_s * math.exp(sigma * rng.standard_normal()))
    return max(60, wait) if draw < share else None


def _comment(rng: np.random.Generator, kind: str) -> str | None:
    if kind != "finetune":
        return None
    base = rng.choice(["llama3-8b", "qwen2-7b", "whisper-large-v3", "clip-vit-l14"])
    data = rng.choice(["support-dialog-v4", "code-review-v2", "asr-zh-v7", "product-images-v3"])
    return f"base_model={base};dataset={data};seed={int(rng.integers(1, 10_000))};git={rng.bytes(4).hex()}"


def _name(rng: np.random.Generator, kind: str, account: str) -> str:
    names = _NAMES[kind]
    pool: tuple[str, ...] = names.get(account, ("train-run",)) if isinstance(names, dict) else names
    return pool[int(rng.integers(len(pool)))]


def user_limit(rng: np.random.Generator, work_s: int, partition_max_s: int) -> int:
    """The --time a user asks for: often the partition default, else a rounded-up overestimate."""
    if rng.random() < 0.3:
        return partition_max_s
    want = work_s * math.exp(rng.normal(0.8, 0.4))
    step = 600 if want <= HOUR_S else (HOUR_S if want <= DAY_S else 12 * HOUR_S)
    return int(min(partition_max_s, max(600, math.ceil(want / step) * step)))


def stream_jobs(
    cluster: Cluster, plan: Plan, streams: tuple[Stream, ...], free_gpus: int, first: int = 0
) -> list[JobSpec]:
    """The jobs of `streams`, numbered (their seeds and keys) from stream `first` on."""
    scale = free_gpus / REFERENCE_GPUS[cluster.name]
    specs = []
    for k, stream in enumerate(streams, start=first):
        rng = np.random.default_rng([plan.seed, 0xC1 if cluster.name == "east" else 0xC2, k])
        times = _arrivals(rng, plan, stream.per_day * scale, stream.weekend)
        burst_of: np.ndarray | None = None
        burst_start: np.ndarray = np.zeros(0, dtype=np.int64)
        if stream.burst is not None:
            # A sweep is one job array (sbatch --array=0-N): its tasks are submitted together.
            lo, hi = stream.burst
            sizes = rng.integers(lo, hi + 1, len(times))
            burst_of = np.repeat(np.arange(len(times)), sizes)
            burst_start = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
            times = np.repeat(times, sizes)
        part_max = PARTITION_MAX_MIN[stream.partition] * 60
        account = stream.accounts[0][0]
        for i, t in enumerate(times):
            if burst_of is None or i == 0 or burst_of[i] != burst_of[i - 1]:
                account = stream.accounts[_pick(rng, stream.accounts)][0]
            mix = stream.sizes if stream.min_nodes is None else scale_out_sizes(cluster, account, stream.min_nodes)
            if not mix:
                continue
            gpus = mix[_pick(rng, mix)][0]
            if gpus > cluster.whole_gpus:
                continue
            work = int(stream.median_min * 60 * math.exp(stream.sigma * rng.standard_normal())) + 5
            limit_s = user_limit(rng, work, part_max)
            run_s, state, cause = outcome(rng, stream.kind, work, limit_s, gpus)
            users = USERS[account]
            specs.append(
                JobSpec(
                    key=(k + 1) * 1_000_000 + i,
                    name=_name(rng, stream.kind, account),
                    user=users[int(rng.integers(len(users)))],
                    account=account,
                    partition=stream.partition,
                    qos=stream.qos,
                    kind=stream.kind,
                    gpus=gpus,
                    submit_s=int(t),
                    run_s=run_s,
                    final_state=state,
                    limit_min=limit_s // 60,
                    requeue=not stream.kind.startswith("notebook"),
                    preempts=PREEMPTS[stream.qos],
                    comment=_comment(rng, stream.kind),
                    typed_gres=bool(rng.random() < 0.7),
                    exit_code=cause,
                    patience_s=patience(rng, stream.kind),
                    array=_array_task(k, i, burst_of, burst_start),
                )
            )
    return specs


def scale_out_sizes(cluster: Cluster, account: str, min_nodes: int) -> tuple[tuple[int, float], ...]:
    """Whole-node sizes of a distributed run and their weights: `min_nodes` up to every node of the
    cluster (at most MAX_JOB_NODES), as far as the account's GrpTRES lets one job go (a larger job
    would pend on AssocGrpGRES for ever), n nodes with weight 1/n: the traces' job counts fall off
    with the GPU count, yet their largest jobs take 42-98% of a cluster (Acme 1,024 GPUs of 2,288
    and 2,416, Helios 2,048 in clusters of 2,080-2,119 [A])."""
    most = min(MAX_JOB_NODES, len(cluster.whole_hosts), cluster.account_limit(account) // GPUS_PER_NODE)
    return tuple((n * GPUS_PER_NODE, 1 / n) for n in range(min_nodes, most + 1))


def chain_sizes(cluster: Cluster, share: float, smallest: int) -> list[int]:
    """GPUs of each chain on `cluster`: whole nodes (2-16, at most a quarter of the cluster, at least
    two nodes where half the share allows) filling `share` of its GPUs; one `smallest` chain where
    the share holds less than a node, none where it holds less than that."""
    budget = int(share * cluster.whole_gpus)
    if budget < GPUS_PER_NODE:
        return [smallest] if budget >= smallest else []
    cap = max(2 * GPUS_PER_NODE, cluster.whole_gpus // 4)
    sizes = []
    while budget >= GPUS_PER_NODE:
        size = next((s for s in CHAIN_SIZES if s <= min(budget, cap)), GPUS_PER_NODE)
        sizes.append(size)
        budget -= size
    return sizes


def chain_jobs(cluster: Cluster, plan: Plan, chains: tuple[tuple[str, int, float, int], ...]) -> list[JobSpec]:
    """Long pre-training runs as chains of stages: each stage checkpoints, hits its limit or ends,
    and the workflow submits the next one; only the first stage of each chain is submitted up front."""
    heads = []
    for k, (account, smallest, share, limit_min) in enumerate(chains):
        for c, gpus in enumerate(chain_sizes(cluster, share, smallest)):
            rng = np.random.default_rng([plan.seed, 0xCA, k, c, len(cluster.name)])
            users = USERS[account]
            user = users[int(rng.integers(len(users)))]
            name = _name(rng, "bigrun", account)
            n_stages = 4 + (plan.end_s - plan.sim_start_s) // (limit_min * 60 // 20)
            nxt: JobSpec | None = None
            for stage in range(int(n_stages) - 1, -1, -1):
                run_s, state, cause = stage_outcome(rng, limit_min * 60, gpus)
                nxt = JobSpec(
                    key=900_000_000 + k * 1_000_000 + c * 1000 + stage,
                    name=name,
                    user=user,
                    account=account,
                    partition="train",
                    qos="high",
                    kind="bigrun",
                    gpus=gpus,
                    submit_s=plan.sim_start_s + int(rng.integers(0, 6 * HOUR_S)),
                    run_s=run_s,
                    final_state=state,
                    limit_min=limit_min,
                    preempts=frozenset({"low"}),
                    comment=f"chain stage {stage}",
                    next=nxt,
                    retry_gap_s=int(rng.integers(10 * 60, 3 * HOUR_S)),
                    exit_code=cause,
                )
            assert nxt is not None
            heads.append(nxt)
    return heads


def inference_jobs(replicas: tuple[Replica, ...], plan: Plan) -> list[JobSpec]:
    """One long-running Slurm job per replica, started well before the range and never ending in it."""
    rng = np.random.default_rng([plan.seed, 0x1AF])
    limit_min = PARTITION_MAX_MIN["infer"]
    specs = []
    for n, rep in enumerate(replicas):
        submit = plan.start_s - int(rng.integers(6 * DAY_S, 20 * DAY_S))
        specs.append(
            JobSpec(
                key=n + 1,
                name=f"vllm-{rep.service}-{rep.index}",
                user=SERVICE_USER,
                account="platform",
                partition="infer",
                qos="inference",
                kind="inference",
                gpus=rep.gpus,
                submit_s=submit,
                run_s=limit_min * 60,
                final_state="COMPLETED",
                limit_min=limit_min,
                nodelist=(rep.host,),
                comment=f"vllm serve {rep.service} --port {rep.port}",
                service=rep.service,
                replica=rep.index,
            )
        )
    return specs


def planted_release(replicas: tuple[Replica, ...], plan: Plan) -> tuple[JobSpec, Filler] | None:
    """The reserve breach: nlp's release run, pinned to the first infer host with a QOS allowed to
    preempt inference (a PreemptList mistake), pushes two chat replicas off; its ablation script,
    in the scavenger QOS, keeps grabbing every other idle GPU on east, so none is left for inference."""
    if plan.breach is None:
        return None
    chat = [r for r in replicas if r.service == "chat-70b"]
    if not chat:
        return None
    host = chat[0].host
    gpus = min(sum(r.gpus for r in chat if r.host == host), 2 * chat[0].gpus)
    t0, t1 = plan.breach
    user = USERS["nlp"][0]
    run = JobSpec(
        key=RELEASE_KEY,
        name="llm-70b-release-train",
        user=user,
        account="nlp",
        partition="train",
        qos="high",
        kind="urgent",
        gpus=gpus,
        submit_s=t0,
        run_s=t1 - t0,
        final_state="COMPLETED",
        limit_min=8 * 60,
        requeue=False,
        nodelist=(host,),
        preempts=frozenset({"low", "inference"}),
        comment="release run pinned to the serving hosts",
    )
    ablation = JobSpec(
        key=998,
        name="llm-70b-release-ablation",
        user=user,
        account="nlp",
        partition="general",
        qos="low",
        kind="scavenger",
        gpus=1,
        submit_s=t0,
        run_s=0,
        final_state="COMPLETED",
        limit_min=8 * 60,
        requeue=False,
        comment="release ablation (grabs idle GPUs)",
    )
    return run, Filler(ablation, t0 - 300, t1, 60, t1 + 1200)


def shard_jobs(cluster: Cluster, plan: Plan) -> list[JobSpec]:
    """The notebooks of the cluster's time-sliced node, pinned to it; none without one. Numbered after
    the cluster's streams, so every other job keeps its seed and key."""
    if not cluster.shared_hosts:
        return []
    host = cluster.hosts.index(cluster.shared_hosts[0])
    specs = stream_jobs(cluster, plan, (SHARD_NOTEBOOKS,), REFERENCE_GPUS[cluster.name], first=len(EAST) + len(WEST))
    return [replace(s, nodelist=(host,), shard=True) for s in specs]


def cluster_jobs(
    cluster: Cluster, plan: Plan, replicas: tuple[Replica, ...]
) -> tuple[list[JobSpec], tuple[Filler, ...]]:
    """Everything submitted on `cluster` in submission order (ties keep this order), and the fillers."""
    east = cluster.name == "east"
    free = cluster.whole_gpus - sum(r.gpus for r in replicas)
    chained = chain_jobs(cluster, plan, EAST_CHAINS if east else WEST_CHAINS)
    chain_gpus = sum(s.gpus for s in chained)
    specs = inference_jobs(replicas, plan) + chained
    specs += stream_jobs(cluster, plan, EAST if east else WEST, max(0, free - chain_gpus))
    specs += shard_jobs(cluster, plan)
    fillers: tuple[Filler, ...] = ()
    planted = planted_release(replicas, plan) if east else None
    if planted is not None:
        specs.append(planted[0])
        fillers = (planted[1],)
    return sorted(specs, key=lambda s: (s.submit_s, s.key)), fillers


def first_job_id(cluster: Cluster, seed: int) -> int:
    return (3_100_000 if cluster.name == "east" else 5_200_000) + (seed % 97) * 1000


def batch_cap(cluster: Cluster, replicas: tuple[Replica, ...]) -> int | None:
    """GPUs the batch-like partitions may hold together on a serving cluster: all but inference and
    the notebook headroom. None elsewhere: notebooks there preempt scavenger work instead."""
    if not replicas:
        return None
    return cluster.whole_gpus - sum(r.gpus for r in replicas) - round(INTERACTIVE_HEADROOM * cluster.whole_gpus)
