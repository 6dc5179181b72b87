"""Keep tests that share an expensive fixture on one pytest-xdist worker.

`./dev test` runs the suite on four workers (`-n 4`) on two cores: much of its time is spent waiting
on servers, browsers and child processes, so more workers than cores keep both busy (docs/testing.md).
A session fixture (the demo month, a real Slurm, a served day) must then be built once, not once per
worker, and a module's fixtures once per module. So a work unit is not a test but a group: the
connected component of the test modules linked by a shared session or package fixture; a module on
its own is its own group.

Groups holding a `slow` test go first (`slow_first`), in that order: xdist's own reordering of work
units by their number of tests is turned off. Only the workers see fixtures, only the controller
schedules: each worker writes the module -> group map to a file the controller names
(`pytest_configure_node`) before it reports its collection, and the controller's scheduler
(`pytest_xdist_make_scheduler`, xdist's LoadScopeScheduling with groups for scopes) reads it when it
splits the collection into units. xdist's own `--dist loadgroup` would do this with marks, but it
rewrites a node id attribute that pytest 9 no longer reads. Used with `--dist loadscope`; any other
`--dist` keeps xdist's own scheduling.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

GROUPS_FILE = "gpusteward_groups_file"

# Fixtures of pytest itself or its plugins that cost nothing to build twice.
_CHEAP = frozenset({"tmp_path_factory", "worker_id", "testrun_uid", "doctest_namespace", "pytestconfig", "cache",
                    "record_testsuite_property", "random_order_seed"})


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _shared_fixtures(item: pytest.Item) -> set[str]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {
        name for name, defs in info.name2fixturedefs.items()
        if name not in _CHEAP and defs and defs[-1].scope in ("session", "package")
    }


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Module path -> group name: modules that share a session or package fixture are one group."""
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for item in items:
        module = find(_module(item.nodeid))
        for fixture in _shared_fixtures(item):
            root = find(f"fixture:{fixture}")
            if root != module:
                parent[root] = module
    return {module: find(module) for module in {_module(item.nodeid) for item in items}}


# --- on each worker -------------------------------------------------------------------------------

def slow_first(items: list[pytest.Item], group_of: dict[str, str]) -> list[pytest.Item]:
    """The items of groups holding a `slow` test first, in collection order otherwise.

    The scheduler hands out groups in collection order, so a long group collected last (the demo
    month, the live service, the two-month quota loop) would start when the other worker has nothing
    left to do, and the run would end with one worker busy for minutes: longest first is the classic
    remedy. Deterministic, so every worker reports the same order."""
    slow = {group_of[_module(i.nodeid)] for i in items if i.get_closest_marker("slow") is not None}
    return sorted(items, key=lambda i: group_of[_module(i.nodeid)] not in slow)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or GROUPS_FILE not in workerinput:
        return
    found = groups(items)
    items[:] = slow_first(items, found)
    target = Path(workerinput[GROUPS_FILE])
    # Every worker collects the same tests and writes the same map; replace atomically.
    partial = target.with_name(f"{target.name}.{os.getpid()}")
    partial.write_text(json.dumps(found, sort_keys=True), encoding="utf-8")
    partial.replace(target)


# --- on the controller ----------------------------------------------------------------------------

@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    config: pytest.Config = node.config
    path = getattr(config, "_gpusteward_groups_path", None)
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="gpusteward-xdist-")) / "groups.json"
        config._gpusteward_groups_path = path  # type: ignore[attr-defined]
    node.workerinput[GROUPS_FILE] = str(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` with groups for scopes; any other `--dist` is xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """Work units are the groups the workers wrote, not single modules."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                path: Path | None = getattr(config, "_gpusteward_groups_path", None)
                written = path is not None and path.exists()  # not when no worker got to collect
                self._groups = json.loads(path.read_text(encoding="utf-8")) if path and written else {}
            module = _module(nodeid)
            return self._groups.get(module, module)

    # xdist orders work units by their number of tests unless told otherwise (`--no-loadscope-reorder`): that put
    # the long groups of a few tests (the date sweep, the quota loop, the live service, Spark) last, after every
    # group slow_first had put behind them, and a worker ran one of them alone at the end of the run.
    config.option.loadscopereorder = False
    return GroupScheduling(config, log)
