"""`python -m bench NAME [--json] [--quick]`, or `python -m bench all --quick`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.harness import load, machine, names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=[*names(), "all"])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer runs")
    args = parser.parse_args(argv)
    chosen = names() if args.name == "all" else (args.name,)
    results = {}
    for name in chosen:
        started = time.perf_counter()
        results[name] = load(name).run(args.quick)
        # On stderr, so a CI log shows which bench its time went to while --json output stays one object.
        print(f"bench {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
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
