"""Error budgets and burn rates: pure arithmetic shared by the evaluators and their property tests.

An objective with target t allows a share (1 - t) of bad events (windows that breached, failed
requests) over its window. With `bad` of `total` events bad:
- burn_rate = (bad / total) / (1 - t): 1 spends the budget exactly over the window, 2 twice as fast;
- budget_left = 1 - burn_rate: never above 1, negative once more than the budget was spent.
With t = 1 there is no budget: any bad event burns it all (burn rate infinite, budget left 0).
"""

from __future__ import annotations

import math


def burn_rate(bad: float, total: float, target: float) -> float | None:
    """How fast the budget burns; None when there were no events."""
    if total <= 0:
        return None
    share = max(0.0, min(1.0, bad / total))
    if target >= 1.0:
        return 0.0 if share == 0 else math.inf
    return share / (1.0 - target)


def budget_left(bad: float, total: float, target: float) -> float | None:
    """Share of the error budget left, <= 1; None when there were no events."""
    rate = burn_rate(bad, total, target)
    if rate is None:
        return None
    if math.isinf(rate):
        return 0.0
    return min(1.0, 1.0 - rate)
