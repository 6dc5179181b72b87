"""Finds English sentences in a text that should be Chinese: runs of three or more English words.

Names and identifiers are not sentences: a token with a digit, `_`, `/`, `.`, `=` or `@` (job ids,
hosts, indicators such as latency_p99, queues such as west/eval), words in backticks, and every
name the caller allows (teams, clusters, services, accounts from the config; product and state
names such as GPU, QOS, COMPLETED) break a run instead of extending it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"`[^`]*`|[^\s,;:()\[\]（）。，；：、「」\"'*|<>{}]+")
_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
_SEPARATORS = re.compile(r"^[\s,;:()\"'*]*$")

ALWAYS_ALLOWED = frozenset({
    "GPU", "GPUs", "QOS", "DCGM", "UTC", "SLA", "SLO", "KV", "Slurm", "Kueue", "PDF", "HTML", "CJK",
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "REQUEUED", "OUT_OF_MEMORY",
    "p50", "p95", "p99", "req", "s", "h", "m", "d", "n", "a", "gpusteward",
})
"""Names and units a Chinese text writes in Latin letters."""


def _is_word(token: str, allowed: frozenset[str]) -> bool:
    return bool(_WORD.fullmatch(token)) and token not in allowed


def english_sentences(text: str, names: Iterable[str] = (), *, min_words: int = 3) -> list[str]:
    """Every run of at least `min_words` consecutive English words outside names and identifiers."""
    allowed = ALWAYS_ALLOWED | {n for name in names for n in (name, *name.split())}
    found: list[str] = []
    for line in text.splitlines():
        run: list[str] = []
        last_end = 0
        for match in _TOKEN.finditer(line):
            token = match.group(0)
            joined = _SEPARATORS.match(line[last_end:match.start()]) is not None
            last_end = match.end()
            if _is_word(token, allowed) and (joined or not run):
                run.append(token)
                continue
            if len(run) >= min_words:
                found.append(" ".join(run))
            run = [token] if _is_word(token, allowed) else []
        if len(run) >= min_words:
            found.append(" ".join(run))
    return found
