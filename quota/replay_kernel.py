"""The replay's event loop, compiled (numba): quota.replay_model's scheduler over arrays.

Why compiled: the month of 1,000 GPUs is about 122k jobs, 255k events and 250k job tries; in Python
that was 55 microseconds of interpreter per replayed job (6.7 s, 0.40x the review's time), with no
hot spot left to restructure, against a goal of a tenth of the review (docs/performance.md, "Replay").
The loop here is the same model step for step as the Python one it replaced (kept as the frozen
reference in tests/quota/replay_reference.py; tests/quota/test_replay_reference.py compares every
segment, placement and preemption), written over integer ids and arrays:

- a job's place in priority order is its rank (the index of its (-QOS priority, -priority, submit,
  index) key in sorted order): comparing keys is comparing ranks;
- pending jobs are kept per class (limit path, GPUs, nodes) as sorted lists of ranks, so a pass tries
  only the heads of the classes that may start, reserve or preempt (quota.replay_model says why that
  returns what a pass over every pending job returns);
- nodes are kept in (free GPUs, node) order as one sorted array of codes free * nodes + node;
- each limit path's room, what each preempting QOS could free per node, and the jobs each node could
  lose to preemption are kept up to date at every start and end.

`cache=True`: the compiled code is kept beside this file (__pycache__), so only the first run after a
change compiles (docs/quota.md, "The replay", has the cost). That is also why the kernel is one file of
more than 400 lines: numba's cache is invalidated only by changes to the file of the cached function,
not by changes to compiled functions it calls from other files (numba's "Notes on Caching", cache
limitations), so a split would let a stale compiled caller outlive an edited callee.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from numba import njit, types
from numba.experimental import structref
from numba.typed import List

INF = np.inf
PASSES = 4  # passes at one moment: a pass that preempted is followed by one for the requeued victims
NOTHING, STARTED, CHANGED, STOP = 0, 1, 2, 3  # what trying one job did; CHANGED: freed GPUs or let a QOS preempt

FIELDS = (
    # jobs (by index)
    "gpus", "spans", "shares", "limit", "qos", "chain_of", "cls", "rank", "job_of_rank",
    "left", "queued", "run_no", "started", "running", "alloc_at", "alloc_len",
    # nodes
    "free", "codes", "scalars",  # scalars: [total_free, held (0/1), held rank, nodes]
    "held_at", "spare", "spare_on", "held_nodes",
    # limits
    "allows", "chain_lim", "chain_nlim", "touch_at", "touch_len", "touches", "room",
    # queue
    "waiting", "wait_at", "wait_len", "fen", "local", "in_queue", "class_pending",
    "class_chain", "class_gpus", "class_spans", "class_share",
    "chain_cls_at", "chain_cls_len",
    "chain_classes", "chain_pending", "chain_qos", "pending_qos",
    # preemption
    "victims", "preemptor", "preyed", "running_qos", "able", "freeable", "on", "requeue_mode",
    # running jobs by start + time limit, scratch room of a search, the alloc pool, events
    "by_end", "room_val", "room_on", "room_nodes", "pool_node", "pool_gpus", "events", "requeued",
    # the pass: widest node, failed shares per (nodes, 1 short / 0 long / -1 by preemption), preempted
    "failed", "pass_state",
    # what comes out
    "seg_job", "seg_queued", "seg_start", "seg_end", "seg_at", "seg_len", "pre_victim", "pre_by", "pre_t",
)


@structref.register
class _StateType(types.StructRef):
    """The replay's state, passed to each compiled step by reference."""

    def preprocess_fields(self, fields: Any) -> Any:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class State(structref.StructRefProxy):
    pass


structref.define_proxy(State, _StateType, list(FIELDS))

_TOTAL_FREE, _HELD, _HELD_RANK, _NODES, _RUNNING = 0, 1, 2, 3, 4
_WIDEST, _PREEMPTED = 0, 1


# -- sorted lists and nodes ----------------------------------------------------------------------

@njit(cache=True)
def _bisect_left(a: Any, x: Any) -> int:  # pragma: no cover - compiled
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _bisect_right(a: Any, x: Any) -> int:  # pragma: no cover - compiled
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _insert(a: Any, base: int, length: int, at: int, value: int) -> None:  # pragma: no cover - compiled
    """Insert `value` at `at` into the sorted run a[base:base + length] (which has room after it)."""
    for k in range(base + length, base + at, -1):
        a[k] = a[k - 1]
    a[base + at] = value


@njit(cache=True)
def _delete(a: Any, base: int, length: int, at: int) -> None:  # pragma: no cover - compiled
    """Delete position `at` of the run a[base:base + length]."""
    for k in range(base + at, base + length - 1):
        a[k] = a[k + 1]


@njit(cache=True)
def _by_end_at(s: Any, j: int) -> int:  # pragma: no cover - compiled
    """Where running job j is (or goes) in s.by_end, ordered by (start + time limit, job)."""
    key = s.started[j] + s.limit[j]
    by_end, started, limit = s.by_end, s.started, s.limit
    lo, hi = 0, s.scalars[_RUNNING]
    while lo < hi:
        mid = (lo + hi) // 2
        o = by_end[mid]
        other = started[o] + limit[o]
        if other < key or (other == key and o < j):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _node_change(s: Any, n: int, by: int) -> None:  # pragma: no cover - compiled
    """Node n's free GPUs change by `by`, its code moving to its place in s.codes."""
    nodes = s.scalars[_NODES]
    codes = s.codes
    old = s.free[n] * nodes + n
    new = old + by * nodes
    s.free[n] += by
    at = _bisect_left(codes, old)
    if new > old:
        while at + 1 < nodes and codes[at + 1] < new:
            codes[at] = codes[at + 1]
            at += 1
    else:
        while at > 0 and codes[at - 1] > new:
            codes[at] = codes[at - 1]
            at -= 1
    codes[at] = new


@njit(cache=True)
def _widest(s: Any) -> int:  # pragma: no cover - compiled
    nodes = s.scalars[_NODES]
    return s.free[s.codes[nodes - 1] % nodes] if nodes else 0


@njit(cache=True)
def _enough(s: Any, need: int) -> int:  # pragma: no cover - compiled
    """How many nodes have at least `need` free GPUs."""
    nodes = s.scalars[_NODES]
    return nodes - _bisect_left(s.codes, need * nodes)


@njit(cache=True)
def _fit(s: Any, need: int, count: int) -> Any:  # pragma: no cover - compiled
    """Best fit: the `count` nodes with the fewest free GPUs that are at least `need`, in index order
    (an empty array when fewer nodes have that many)."""
    nodes = s.scalars[_NODES]
    at = _bisect_left(s.codes, need * nodes)
    if nodes - at < count or count <= 0:
        return np.empty(0, np.int64)
    return np.sort(s.codes[at:at + count] % nodes)


@njit(cache=True)
def _fit_over(s: Any, need: int, count: int) -> Any:  # pragma: no cover - compiled
    """`_fit` where the nodes of the scratch room (s.room_nodes) have s.room_val GPUs instead of their free ones."""
    if len(s.room_nodes) == 0:
        return _fit(s, need, count)
    nodes = s.scalars[_NODES]
    codes, room_on = s.codes, s.room_on
    extra = []
    for n in s.room_nodes:
        r = s.room_val[n]
        if r >= need:
            extra.append(r * nodes + n)
    extra.sort()
    at, end, e = _bisect_left(codes, need * nodes), nodes, 0
    chosen = np.empty(count, np.int64)
    got = 0
    while got < count:
        while at < end and room_on[codes[at] % nodes]:
            at += 1
        if at < end and (e >= len(extra) or codes[at] < extra[e]):
            chosen[got] = codes[at] % nodes
            at += 1
        elif e < len(extra):
            chosen[got] = extra[e] % nodes
            e += 1
        else:
            return np.empty(0, np.int64)
        got += 1
    return np.sort(chosen)


@njit(cache=True)
def _room_clear(s: Any) -> None:  # pragma: no cover - compiled
    for n in s.room_nodes:
        s.room_on[n] = False
    s.room_nodes.clear()


@njit(cache=True)
def _room_set(s: Any, n: Any, value: Any) -> None:  # pragma: no cover - compiled
    if not s.room_on[n]:
        s.room_on[n] = True
        s.room_nodes.append(n)
    s.room_val[n] = value


@njit(cache=True)
def _split(gpus: int, chosen: Any) -> Any:  # pragma: no cover - compiled
    """GPUs per chosen node: even, the first ones one more where they do not divide."""
    base, extra = divmod(gpus, len(chosen))
    out = np.empty(len(chosen), np.int64)
    for k in range(len(chosen)):
        out[k] = base + (1 if k < extra else 0)
    return out


# -- limits and preemption bookkeeping -------------------------------------------------------------

@njit(cache=True)
def _hold(s: Any, chain: int, gpus: int) -> None:  # pragma: no cover - compiled
    """A job's GPUs count against (gpus > 0) or come back to (gpus < 0) every limit on its path."""
    allows = s.allows
    for k in range(s.chain_nlim[chain]):
        allows[s.chain_lim[chain, k]] -= gpus
    for t in range(s.touch_at[chain], s.touch_at[chain] + s.touch_len[chain]):
        other = s.touches[t]
        low = allows[s.chain_lim[other, 0]]
        for k in range(1, s.chain_nlim[other]):
            low = min(low, allows[s.chain_lim[other, k]])
        s.room[other] = low


@njit(cache=True)
def _track(s: Any, i: int, by: int) -> None:  # pragma: no cover - compiled
    """Job i starts (by 1) or stops (by -1) on its allocation: running jobs per QOS, what each
    preempting QOS could free per node, the jobs each node could lose."""
    q = s.qos[i]
    s.running_qos[q] += by
    if not s.preyed[q]:
        return
    qn = len(s.running_qos)
    a0, a1 = s.alloc_at[i], s.alloc_at[i] + s.alloc_len[i]
    for p in range(qn):
        if s.victims[p, q]:
            for a in range(a0, a1):
                s.freeable[p, s.pool_node[a]] += by * s.pool_gpus[a]
    for a in range(a0, a1):
        on = s.on[s.pool_node[a]]
        if by > 0:
            on.append(i)
        else:
            for k in range(len(on)):
                if on[k] == i:
                    del on[k]
                    break
    if s.running_qos[q] == (1 if by > 0 else 0):
        for p in range(qn):
            if s.victims[p, q]:
                able = False
                for v in range(qn):
                    if s.victims[p, v] and s.running_qos[v] > 0:
                        able = True
                        break
                s.able[p] = able


# -- starting and stopping -------------------------------------------------------------------------

@njit(cache=True)
def _begin(s: Any, i: int, t: float, chosen: Any, parts: Any) -> None:  # pragma: no cover - compiled
    s.alloc_at[i] = len(s.pool_node)
    s.alloc_len[i] = len(chosen)
    for k in range(len(chosen)):
        _node_change(s, chosen[k], -parts[k])
        s.pool_node.append(chosen[k])
        s.pool_gpus.append(parts[k])
    s.scalars[_TOTAL_FREE] -= s.gpus[i]
    _hold(s, s.chain_of[i], s.gpus[i])
    s.started[i] = t
    s.running[i] = True
    _track(s, i, 1)
    _insert(s.by_end, 0, s.scalars[_RUNNING], _by_end_at(s, i), i)
    s.scalars[_RUNNING] += 1
    s.run_no[i] += 1
    heapq.heappush(s.events, (t + s.left[i], 0, i, s.run_no[i]))


@njit(cache=True)
def _stop(s: Any, i: int, t: float) -> None:  # pragma: no cover - compiled
    a0, a1 = s.alloc_at[i], s.alloc_at[i] + s.alloc_len[i]
    for a in range(a0, a1):
        _node_change(s, s.pool_node[a], s.pool_gpus[a])
    s.scalars[_TOTAL_FREE] += s.gpus[i]
    _hold(s, s.chain_of[i], -s.gpus[i])
    _track(s, i, -1)
    _delete(s.by_end, 0, s.scalars[_RUNNING], _by_end_at(s, i))
    s.scalars[_RUNNING] -= 1
    s.running[i] = False
    start = s.started[i]
    s.seg_job.append(i)
    s.seg_queued.append(s.queued[i])
    s.seg_start.append(start)
    s.seg_end.append(t)
    s.seg_at.append(a0)
    s.seg_len.append(a1 - a0)
    s.left[i] = max(0.0, s.left[i] - (t - start))


# Pending jobs: each class's jobs are known up front, so a class is its jobs' ranks in order
# (s.waiting[s.wait_at[c]:][:s.wait_len[c]]) with a Fenwick tree of which of them are pending: adding,
# removing and finding the first pending job after a rank are O(log n) however long the queue grows.

@njit(cache=True)
def _fen_add(s: Any, c: int, position: int, by: int) -> None:  # pragma: no cover - compiled
    base, size = s.wait_at[c] + c, s.wait_len[c]
    k = position + 1
    while k <= size:
        s.fen[base + k] += by
        k += k & -k


@njit(cache=True)
def _first_from(s: Any, c: int, position: int) -> int:  # pragma: no cover - compiled
    """The rank of class c's first pending job at or after `position` in its order; -1: none."""
    base, size, fen = s.wait_at[c] + c, s.wait_len[c], s.fen
    want = 1
    k = position
    while k > 0:  # pending jobs before `position`
        want += fen[base + k]
        k -= k & -k
    if want > s.class_pending[c]:
        return -1
    at, step = 0, 1
    while step * 2 <= size:
        step *= 2
    while step > 0:
        if at + step <= size and fen[base + at + step] < want:
            at += step
            want -= fen[base + at]
        step //= 2
    return s.waiting[s.wait_at[c] + at]


@njit(cache=True)
def _after(s: Any, c: int, rank: int) -> int:  # pragma: no cover - compiled
    """The rank of class c's first pending job after `rank` (-1: from its first); -1: none."""
    if rank < 0:
        return _first_from(s, c, 0)
    return _first_from(s, c, _bisect_right(s.waiting[s.wait_at[c]:s.wait_at[c] + s.wait_len[c]], rank))


@njit(cache=True)
def _queue_add(s: Any, i: int) -> None:  # pragma: no cover - compiled
    c = s.cls[i]
    _fen_add(s, c, s.local[i], 1)
    s.class_pending[c] += 1
    s.in_queue[i] = True
    s.chain_pending[s.chain_of[i]] += 1


@njit(cache=True)
def _queue_remove(s: Any, i: int) -> None:  # pragma: no cover - compiled
    c = s.cls[i]
    _fen_add(s, c, s.local[i], -1)
    s.class_pending[c] -= 1
    s.in_queue[i] = False
    s.chain_pending[s.chain_of[i]] -= 1


@njit(cache=True)
def _preempt(s: Any, j: Any, t: float) -> None:  # pragma: no cover - compiled
    _stop(s, j, t)
    q = s.qos[j]
    if s.requeue_mode[q] and s.left[j] > 0:
        s.queued[j] = t
        s.requeued.append(j)  # pending now, tried from the next pass on
        s.pending_qos[q] += 1
    else:
        s.left[j] = 0.0  # cancelled: its segment ended at t


@njit(cache=True)
def _preempt_for(s: Any, i: int, t: float) -> Any:  # pragma: no cover - compiled
    """Nodes for job i by preempting jobs of a QOS its QOS may preempt: the nodes that cost the
    fewest preempted GPUs, victims youngest first; an empty array when even that does not make room."""
    q, free = s.qos[i], s.free
    need, count = s.shares[i], s.spans[i]
    nodes = s.scalars[_NODES]
    costs = []
    for n in range(nodes):
        if free[n] + s.freeable[q, n] >= need:
            costs.append(max(0, need - free[n]) * nodes + n)
    if len(costs) < count:
        return np.empty(0, np.int64)
    costs.sort()
    chosen = np.empty(count, np.int64)
    for k in range(count):
        chosen[k] = costs[k] % nodes
    chosen.sort()
    for n in chosen:
        prey = []
        for j in s.on[n]:
            if s.victims[q, s.qos[j]]:
                prey.append(j)
        order = np.empty(len(prey), np.int64)
        for k in range(len(prey)):
            order[k] = prey[k]
        # youngest first: by (-start, -job)
        for a in range(1, len(order)):
            x = order[a]
            b = a - 1
            while b >= 0 and (s.started[order[b]] < s.started[x]
                              or (s.started[order[b]] == s.started[x] and order[b] < x)):
                order[b + 1] = order[b]
                b -= 1
            order[b + 1] = x
        for j in order:
            if free[n] >= need:
                break
            _preempt(s, j, t)
            s.pre_victim.append(j)
            s.pre_by.append(i)
            s.pre_t.append(t)
    return chosen


# -- the pass --------------------------------------------------------------------------------------

@njit(cache=True)
def _reserve(s: Any, i: int, t: float) -> None:  # pragma: no cover - compiled
    """Reserve for job i where and when it can start earliest, by the time limits of the running jobs
    (a reservation at infinity with no nodes when it never can)."""
    need, count, free = s.shares[i], s.spans[i], s.free
    enough = _enough(s, need)
    _room_clear(s)
    at = t if enough >= count else INF
    found = enough >= count
    if not found:
        for j in s.by_end[:s.scalars[_RUNNING]]:
            for a in range(s.alloc_at[j], s.alloc_at[j] + s.alloc_len[j]):
                n, k = s.pool_node[a], s.pool_gpus[a]
                before = s.room_val[n] if s.room_on[n] else free[n]
                _room_set(s, n, before + k)
                if before < need <= before + k:
                    enough += 1
            if enough >= count:
                at = max(s.started[j] + s.limit[j], t)
                found = True
                break
    chosen = _fit_over(s, need, count) if found else np.empty(0, np.int64)
    for n in s.held_nodes:
        s.spare_on[n] = False
    s.held_nodes.clear()
    s.scalars[_HELD] = 1
    s.scalars[_HELD_RANK] = s.rank[i]
    if len(chosen) == 0:
        s.held_at[0] = INF
    else:
        s.held_at[0] = at
        parts = _split(s.gpus[i], chosen)
        for k in range(len(chosen)):
            n = chosen[k]
            s.spare_on[n] = True
            s.held_nodes.append(n)
            s.spare[n] = (s.room_val[n] if s.room_on[n] else free[n]) - parts[k]
    _room_clear(s)


@njit(cache=True)
def _place(s: Any, i: int, t: float, held: bool) -> Any:  # pragma: no cover - compiled
    long = held and t + s.limit[i] > s.held_at[0]
    if not long:
        chosen = _fit(s, s.shares[i], s.spans[i])
    else:
        _room_clear(s)
        for n in s.held_nodes:
            _room_set(s, n, min(s.free[n], s.spare[n]))
        chosen = _fit_over(s, s.shares[i], s.spans[i])
        _room_clear(s)
    if len(chosen) and long:
        parts = _split(s.gpus[i], chosen)
        for k in range(len(chosen)):
            if s.spare_on[chosen[k]]:
                s.spare[chosen[k]] -= parts[k]
    return chosen


@njit(cache=True)
def _nobody_can_start(s: Any) -> bool:  # pragma: no cover - compiled
    """No free GPU, and no pending job that may preempt a running one."""
    if s.scalars[_TOTAL_FREE] > 0:
        return False
    for q in range(len(s.pending_qos)):
        if s.preemptor[q] and s.pending_qos[q] > 0 and s.able[q]:
            return False
    return True


@njit(cache=True)
def _failed_at(spans: int, mode: int) -> int:  # pragma: no cover - compiled
    return spans * 3 + mode + 1


@njit(cache=True)
def _attempt(s: Any, i: int, t: float) -> int:  # pragma: no cover - compiled
    """Try one pending job: start it, preempt for it, or reserve for it."""
    q = s.qos[i]
    preemptor = s.able[q]
    if s.scalars[_TOTAL_FREE] <= 0 and not preemptor:
        return STOP if _nobody_can_start(s) else NOTHING
    if s.gpus[i] > s.room[s.chain_of[i]]:
        return NOTHING  # a limit on its path holds it
    share, spans = s.shares[i], s.spans[i]
    # A job ahead of the reserved one is not bound by its reservation.
    held = s.scalars[_HELD] == 1 and s.rank[i] > s.scalars[_HELD_RANK]
    short = 1 if (not held or t + s.limit[i] <= s.held_at[0]) else 0
    failed = s.failed
    chosen = np.empty(0, np.int64)
    if share <= s.pass_state[_WIDEST] and share < failed[_failed_at(spans, short)]:
        chosen = _place(s, i, t, held)
        if len(chosen) == 0:
            failed[_failed_at(spans, short)] = share
    changed = False
    if len(chosen) == 0 and preemptor and share < failed[_failed_at(spans, -1)]:
        chosen = _preempt_for(s, i, t)
        if len(chosen) == 0:
            failed[_failed_at(spans, -1)] = share
        else:
            s.pass_state[_PREEMPTED] = 1
            changed = True
            failed[:] = INF  # the victims freed GPUs
    if len(chosen):
        _queue_remove(s, i)
        s.pending_qos[q] -= 1
        _begin(s, i, t, chosen, _split(s.gpus[i], chosen))
        s.pass_state[_WIDEST] = _widest(s)
        # The first running job of a QOS that others preempt lets them preempt again.
        return CHANGED if changed or (s.preyed[q] and s.running_qos[q] == 1) else STARTED
    if not held:
        _reserve(s, i, t)
    return NOTHING


@njit(cache=True)
def _new_pass(s: Any) -> None:  # pragma: no cover - compiled
    s.pass_state[_WIDEST] = _widest(s)
    s.pass_state[_PREEMPTED] = 0
    s.failed[:] = INF


@njit(cache=True)
def _requeue(s: Any) -> None:  # pragma: no cover - compiled
    for j in s.requeued:
        _queue_add(s, j)
    s.requeued.clear()


@njit(cache=True)
def _schedule(s: Any, t: float, jobs: Any) -> bool:  # pragma: no cover - compiled
    """One pass at time t over `jobs` (pending, in priority order); whether it preempted."""
    if _nobody_can_start(s):
        return False
    _new_pass(s)
    for i in jobs:
        if _attempt(s, i, t) == STOP:
            break
    _requeue(s)
    return s.pass_state[_PREEMPTED] == 1


@njit(cache=True)
def _fits(s: Any, c: int) -> bool:  # pragma: no cover - compiled
    """Whether a job of class c may find nodes now, free or by preempting."""
    share, spans = s.class_share[c], s.class_spans[c]
    if s.able[s.chain_qos[s.class_chain[c]]] and share < s.failed[_failed_at(spans, -1)]:
        return True
    return _enough(s, share) >= spans


@njit(cache=True)
def _worth_trying(s: Any, c: int, rank: int) -> bool:  # pragma: no cover - compiled
    """Whether class c's next job may start, reserve or preempt (quota.replay_model says when not)."""
    chain = s.class_chain[c]
    if (s.scalars[_TOTAL_FREE] <= 0 and not s.able[s.chain_qos[chain]]) or s.class_gpus[c] > s.room[chain]:
        return False
    if s.scalars[_HELD] == 0 or rank <= s.scalars[_HELD_RANK]:
        return True  # it would reserve
    return _fits(s, c)


@njit(cache=True)
def _heads(s: Any, after: int, reserver_only: bool, heads: Any) -> None:  # pragma: no cover - compiled
    """Push onto `heads` the first job after rank `after` of each class whose limits let one more job
    of it start and that fits or may preempt (flag 0), and the first job of the other classes within
    their limits (flag 1: the next reserver)."""
    out_of_gpus = s.scalars[_TOTAL_FREE] <= 0
    best, best_c = -1, -1
    for chain in range(len(s.chain_pending)):
        if s.chain_pending[chain] == 0:
            continue
        preemptor = s.able[s.chain_qos[chain]]
        if out_of_gpus and not preemptor:
            continue
        room = s.room[chain]
        for x in range(s.chain_cls_at[chain], s.chain_cls_at[chain] + s.chain_cls_len[chain]):
            c = s.chain_classes[x]
            if s.class_gpus[c] > room:
                break
            rank = _after(s, c, after)
            if rank < 0:
                continue
            share, spans = s.class_share[c], s.class_spans[c]
            if _enough(s, share) >= spans or (preemptor and share < s.failed[_failed_at(spans, -1)]):
                if not reserver_only:
                    heapq.heappush(heads, (rank, c, 0))
            elif best < 0 or rank < best:
                best, best_c = rank, c
    if best >= 0:
        heapq.heappush(heads, (best, best_c, 1))


@njit(cache=True)
def _schedule_all(s: Any, t: float) -> bool:  # pragma: no cover - compiled
    """`_schedule` over every pending job, trying only the heads of the classes that may still start,
    reserve or preempt, merged in priority order."""
    if _nobody_can_start(s):
        return False
    _new_pass(s)
    heads = [(0, 0, 0)]
    heads.pop()
    _heads(s, -1, False, heads)
    last = -1
    while len(heads) > 0:
        rank, c, reserver = heapq.heappop(heads)
        if rank == last:
            continue  # a class can be in the heap twice: as one that fits and as the next reserver
        last = rank
        i = s.job_of_rank[rank]
        # A class not worth trying stays so for the rest of the pass, unless GPUs come back.
        tried = _worth_trying(s, c, rank)
        done = _attempt(s, i, t) if tried else NOTHING
        if tried and done == STOP:
            break
        if tried and done == CHANGED:
            heads.clear()
            _heads(s, rank, False, heads)
        elif reserver == 1:
            if s.scalars[_HELD] == 0 or s.scalars[_HELD_RANK] > rank:  # nothing reserved: the next that would
                _heads(s, rank, True, heads)
        elif tried:
            later = _after(s, c, rank)
            if later >= 0:
                heapq.heappush(heads, (later, c, 0))
    _requeue(s)
    return s.pass_state[_PREEMPTED] == 1


# -- the run ---------------------------------------------------------------------------------------

@njit(cache=True)
def _pin(s: Any, i: int, t: float, named: Any) -> None:  # pragma: no cover - compiled
    """Start a job that started before the window: on its recorded nodes where known, else best fit,
    else the nodes with the most free GPUs (over their size if need be: it did run there)."""
    nodes = s.scalars[_NODES]
    if len(named) == s.spans[i]:
        chosen = np.sort(named)
    else:
        chosen = _fit(s, s.shares[i], s.spans[i])
        if len(chosen) == 0:
            count = min(s.spans[i], nodes)
            chosen = np.sort(np.argsort(-s.free, kind="mergesort")[:count])
    _begin(s, i, t, chosen, _split(s.gpus[i], chosen))


@njit(cache=True)
def _run(s: Any, submit: Any, pinned: Any, pinned_start: Any, named_at: Any,
         named: Any) -> None:  # pragma: no cover - compiled
    """Replay every job of `s` to the end of its events."""
    for i in range(len(submit)):
        s.queued[i] = submit[i]
        if pinned[i]:
            _pin(s, i, pinned_start[i], named[named_at[i]:named_at[i + 1]])
        else:
            heapq.heappush(s.events, (submit[i], 1, i, 0))
    events = s.events
    while len(events):
        t = events[0][0]
        freed = False
        arrived = []
        while len(events) and events[0][0] == t:
            _t, kind, i, run_no = heapq.heappop(events)
            if kind == 0:
                if run_no == s.run_no[i] and s.running[i]:  # else: preempted before this end
                    _stop(s, i, t)
                    freed = True
            else:
                _queue_add(s, i)
                s.pending_qos[s.qos[i]] += 1
                arrived.append(s.rank[i])
        # Nothing freed: what failed before fails again, only the arrivals are new (unless one of
        # them preempted: then the requeued victims need a full pass too).
        again = freed
        if not freed and len(arrived) > 0 and not _nobody_can_start(s):
            arrived.sort()
            jobs = np.empty(len(arrived), np.int64)
            for k in range(len(arrived)):
                jobs[k] = s.job_of_rank[arrived[k]]
            again = _schedule(s, t, jobs)
        if again:
            # GPUs came back: a full pass, with a fresh reservation.
            s.scalars[_HELD] = 0
            s.scalars[_HELD_RANK] = -1
            passes = 0
            more = True
            while more and _pending(s) and passes < PASSES:
                more = _schedule_all(s, t)
                passes += 1
    # What never started, in priority order.
    left = []
    for i in range(len(s.in_queue)):
        if s.in_queue[i]:
            left.append(s.rank[i])
    left.sort()
    for r in left:
        i = s.job_of_rank[r]
        s.seg_job.append(i)
        s.seg_queued.append(s.queued[i])
        s.seg_start.append(INF)
        s.seg_end.append(INF)
        s.seg_at.append(0)
        s.seg_len.append(0)


@njit(cache=True)
def _pending(s: Any) -> bool:  # pragma: no cover - compiled
    for c in range(len(s.chain_pending)):
        if s.chain_pending[c]:
            return True
    return False


@njit(cache=True)
def _make_state(gpus: Any, spans: Any, limit: Any, qos: Any, chain_of: Any, cls: Any, rank: Any, work: Any,
               node_gpus: Any, allows: Any, chain_lim: Any, chain_nlim: Any, touch_at: Any, touch_len: Any,
               touches: Any, class_chain: Any, class_gpus: Any, class_spans: Any, chain_cls_at: Any,
               chain_cls_len: Any, chain_classes: Any, chain_qos: Any, victims: Any, requeue_mode: Any,
               max_spans: int) -> Any:  # pragma: no cover - compiled
    """The replay's state for jobs and a cluster given as arrays (quota.replay_model builds them)."""
    n, nodes, qn = len(gpus), len(node_gpus), len(requeue_mode)
    shares = (gpus + spans - 1) // spans
    job_of_rank = np.empty(n, np.int64)
    for i in range(n):
        job_of_rank[rank[i]] = i
    free = node_gpus.copy()
    codes = np.sort(free * nodes + np.arange(nodes))
    scalars = np.array([free.sum(), 0, -1, nodes, 0], np.int64)
    room = np.full(len(chain_nlim), INF)
    for c in range(len(chain_nlim)):
        for k in range(chain_nlim[c]):
            room[c] = min(room[c], allows[chain_lim[c, k]])
    classes = len(class_chain)
    wait_len = np.zeros(classes, np.int64)
    for i in range(n):
        wait_len[cls[i]] += 1
    wait_at = np.cumsum(wait_len) - wait_len
    by_class = np.argsort(cls * n + rank)  # by class, then priority order
    local = np.empty(n, np.int64)
    for k in range(n):
        local[by_class[k]] = k - wait_at[cls[by_class[k]]]
    on = List()
    for _n in range(nodes):
        on.append(List.empty_list(types.int64))
    preemptor = np.zeros(qn, np.bool_)
    preyed = np.zeros(qn, np.bool_)
    for p in range(qn):
        for v in range(qn):
            if victims[p, v]:
                preemptor[p] = True
                preyed[v] = True
    events = [(0.0, 0, 0, 0)]
    events.pop()
    return State(
        gpus, spans, shares, limit, qos, chain_of, cls, rank, job_of_rank,
        work.copy(), np.zeros(n), np.zeros(n, np.int64), np.zeros(n), np.zeros(n, np.bool_),
        np.zeros(n, np.int64), np.zeros(n, np.int64),
        free, codes, scalars, np.full(1, INF), np.zeros(nodes, np.int64), np.zeros(nodes, np.bool_),
        List.empty_list(types.int64),
        allows.copy(), chain_lim, chain_nlim, touch_at, touch_len, touches, room,
        rank[by_class], wait_at, wait_len, np.zeros(n + classes, np.int64), local, np.zeros(n, np.bool_),
        np.zeros(classes, np.int64), class_chain, class_gpus, class_spans,
        (class_gpus + class_spans - 1) // class_spans,
        chain_cls_at, chain_cls_len, chain_classes, np.zeros(len(chain_nlim), np.int64), chain_qos,
        np.zeros(qn, np.int64),
        victims, preemptor, preyed, np.zeros(qn, np.int64), np.zeros(qn, np.bool_), np.zeros((qn, nodes), np.int64),
        on, requeue_mode,
        np.zeros(n, np.int64), np.zeros(nodes, np.int64), np.zeros(nodes, np.bool_),
        List.empty_list(types.int64), List.empty_list(types.int64), List.empty_list(types.int64), events,
        List.empty_list(types.int64),
        np.full((max_spans + 1) * 3, INF), np.zeros(2, np.int64),
        List.empty_list(types.int64), List.empty_list(types.float64), List.empty_list(types.float64),
        List.empty_list(types.float64), List.empty_list(types.int64), List.empty_list(types.int64),
        List.empty_list(types.int64), List.empty_list(types.int64), List.empty_list(types.float64),
    )


@njit(cache=True)
def _array(values: Any, dtype: Any) -> Any:  # pragma: no cover - compiled
    out = np.empty(len(values), dtype)
    for k in range(len(values)):
        out[k] = values[k]
    return out


@njit(cache=True)
def _columns(s: Any) -> Any:  # pragma: no cover - compiled
    """The replay's output as arrays: segments (job, queued, start, end, where its placement is in the
    pool and how long), the pool (node, GPUs), preemptions (victim, preemptor, time)."""
    return (_array(s.seg_job, np.int64), _array(s.seg_queued, np.float64), _array(s.seg_start, np.float64),
            _array(s.seg_end, np.float64), _array(s.seg_at, np.int64), _array(s.seg_len, np.int64),
            _array(s.pool_node, np.int64), _array(s.pool_gpus, np.int64),
            _array(s.pre_victim, np.int64), _array(s.pre_by, np.int64), _array(s.pre_t, np.float64))


@njit(cache=True)
def replay(jobs: Any, cluster: Any, submit: Any, pinned: Any, pinned_start: Any, named_at: Any,
           named: Any) -> Any:  # pragma: no cover - compiled
    """The replay of jobs and a cluster given as arrays (quota.replay_model builds them: `jobs` and
    `cluster` are _make_state's arguments); its output as `_columns` gives it."""
    s = _make_state(*jobs, *cluster)
    _run(s, submit, pinned, pinned_start, named_at, named)
    return _columns(s)
