"""`python -m bench NAME [--json] [--quick]`, or `python -m bench all --quick`."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

from bench.harness import BY_NAME_ONLY, machine, names, run_timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=[*names(), "all"])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer runs")
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="with `all`: run this many benches at once, each in its own process (CI's smoke run of --quick; "
             "figures measured so share the machine, so compare only runs made alike)",
    )
    args = parser.parse_args(argv)
    chosen = tuple(n for n in names() if n not in BY_NAME_ONLY) if args.name == "all" else (args.name,)
    results = {}
    if args.jobs > 1 and len(chosen) > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {name: pool.submit(run_timed, name, args.quick) for name in chosen}
            for name, future in futures.items():
                results[name], seconds = future.result()
                print(f"bench {name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    else:
        for name in chosen:
            results[name], seconds = run_timed(name, args.quick)
            # On stderr, so a CI log shows which bench its time went to while --json output stays one object.
            print(f"bench {name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    out = results[args.name] if args.name != "all" else results
    out = {"machine": machine(), **out} if isinstance(out, dict) else out
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
