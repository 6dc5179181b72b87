"""The long-running fuzz target: `python -m tests.badinput.fuzz --minutes 10` (not collected by pytest).

Runs every target of tests.badinput.targets, tests.badinput.scrape_targets (the live DCGM and
inference scrapers) and tests.badinput.service_targets (the service's import folder and control
API) in turn, in rounds of fresh random examples, until the
time is up. An exception other than a target's documented error is printed with the input that
raised it, and the run exits 1 after finishing (so one bug does not hide the others).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.badinput import scrape_targets, service_targets, targets

Found = dict[tuple[str, str], str]


def _suite(
    found: Found, examples: int, folder: service_targets.FolderRig, api: service_targets.ApiRig
) -> list[tuple[str, Callable[[], None]]]:
    config = settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))

    def guard(name: str, fn: Callable[[], None], shown: Any) -> None:
        try:
            fn()
        except Exception as exc:  # the finding: anything but the documented error
            key = (name, f"{type(exc).__name__}: {str(exc)[:120]}")
            if key not in found:
                found[key] = f"{repr(shown)[:2000]}\n{traceback.format_exc(limit=4)}"

    @config
    @given(text=targets.exposition_texts, openmetrics=st.booleans())
    def exposition(text: str, openmetrics: bool) -> None:
        guard("exposition", lambda: targets.exposition(text, openmetrics), text)

    @config
    @given(data=targets.mutated_json() | targets.json_values)
    def sacct(data: Any) -> None:
        guard("sacct", lambda: targets.sacct_data(data), data)

    @config
    @given(name=st.sampled_from(sorted(targets.SLURM_READERS)), data=targets.mutated_json() | targets.json_values)
    def slurm(name: str, data: Any) -> None:
        guard(f"slurmrestd {name}", lambda: targets.slurm(name, data), data)

    @config
    @given(text=st.text(max_size=400))
    def slurm_text(text: str) -> None:
        guard("slurm text", lambda: targets.slurm_text(text), text)

    @config
    @given(text=targets.config_texts)
    def config_loader(text: str) -> None:
        guard("config", lambda: targets.config(text), text)

    @config
    @given(text=targets.exposition_texts, openmetrics=st.booleans(), inference=st.booleans())
    def live_scrape(text: str, openmetrics: bool, inference: bool) -> None:
        guard("live scrape", lambda: scrape_targets.live_scrape(text, openmetrics, inference), text)

    @config
    @given(files=service_targets.hostile_files)
    def import_folder(files: list[tuple[str, bytes]]) -> None:
        guard("import folder", lambda: service_targets.import_folder(folder, files), files)

    @config
    @given(request=service_targets.raw_requests())
    def control_api(request: bytes) -> None:
        guard("control API", lambda: service_targets.control_api(api, request), request)

    return [("exposition", exposition), ("sacct", sacct), ("slurmrestd", slurm), ("slurm text", slurm_text),
            ("config", config_loader), ("live scrape", live_scrape), ("import folder", import_folder),
            ("control API", control_api)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.badinput.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--examples", type=int, default=500, help="examples per target per round")
    parser.add_argument("--only", action="append", default=[], help="run only this target (repeatable)")
    args = parser.parse_args(argv)
    found: Found = {}
    started = time.monotonic()
    deadline = started + 60 * args.minutes
    rounds = 0
    tried: dict[str, int] = {}
    with service_targets.folder_rig() as folder, service_targets.api_rig() as api:
        while time.monotonic() < deadline:
            for name, run in _suite(found, args.examples, folder, api):
                if time.monotonic() >= deadline:
                    break
                if args.only and name not in args.only:
                    continue
                run()
                tried[name] = tried.get(name, 0) + args.examples
                print(f"round {rounds + 1}: {name} done, {len(found)} distinct findings", flush=True)
            rounds += 1
    for (target, error), example in sorted(found.items()):
        print(f"\n== {target}: {error}\n{example}")
    elapsed = (time.monotonic() - started) / 60
    print(f"\n{rounds} rounds in {elapsed:.1f} minutes, {len(found)} distinct findings; examples per target: {tried}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
