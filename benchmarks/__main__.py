"""``python -m benchmarks [--quick] [--only NAMES] [--results PATH] [--workdir PATH]`` (and ``pmw bench``).

Runs the benchmarks one after the other, prints each one's table and targets as it finishes, and records
the figures in a results file: benchmarks/results.json for a full run, benchmarks/.data/results-quick.json
for a quick one (which only proves the benchmarks still run: its sizes are too small for its figures to
mean anything).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import (
    bookkeeping,
    catalogue,
    market_links,
    memory,
    normalization,
    peers,
    queries,
    request_efficiency,
    request_windows,
    run_retention,
    snapshot_rounds,
)
from benchmarks.report import BenchmarkUnavailable, Report, write_results

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / ".data"  # generated data and quick results; git-ignored
BENCHMARKS: dict[str, Callable[[bool, Path], Report]] = {
    "normalisation": normalization.run,
    "memory": memory.run,
    "requests": request_efficiency.run,
    "windows": request_windows.run,
    "queries": queries.run,
    "snapshots": snapshot_rounds.run,
    "peers": peers.run,
    "retention": run_retention.run,
    "links": market_links.run,
    "catalogue": catalogue.run,
    "bookkeeping": bookkeeping.run,
}


def default_results(quick: bool) -> Path:
    return DATA_DIR / "results-quick.json" if quick else HERE / "results.json"


def run(
    quick: bool = False, only: Sequence[str] | None = None, results: Path | None = None, workdir: Path = DATA_DIR
) -> int:
    """Run the chosen benchmarks (all by default); 0 once their figures are recorded, whatever they are, 1 when
    a benchmark could not run (one line says why; the others' figures are still recorded)."""
    results = results or default_results(quick)
    reports, unavailable = [], []
    for name in only or BENCHMARKS:
        print(f"== {name} ({'quick' if quick else 'full'}) ...", flush=True)
        started = time.perf_counter()
        try:
            reports.append(BENCHMARKS[name](quick, workdir))
        except BenchmarkUnavailable as error:
            unavailable.append(f"{name}: cannot run: {error}")
            print(unavailable[-1], file=sys.stderr, flush=True)
            continue
        print(reports[-1].render(), flush=True)
        print(f"({time.perf_counter() - started:.0f} s)\n", flush=True)
    if not reports:
        return 1
    write_results(results, quick, reports)
    targets = [target for report in reports for target in report.targets]
    missed = [f"{report.name}: {t.description}" for report in reports for t in report.targets if not t.met]
    print(f"{len(targets) - len(missed)} of {len(targets)} targets met; figures recorded in {results}")
    for line in missed:
        print(f"  missed: {line}")
    return 1 if unavailable else 0


def benchmark_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown benchmark(s) {', '.join(unknown) or text!r}; expected a comma list of {', '.join(BENCHMARKS)}"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks``, which ``pmw bench`` shares."""
    parser.add_argument("--quick", action="store_true", help="tiny sizes: proves the benchmarks run (CI)")
    parser.add_argument(
        "--only",
        type=benchmark_names,
        default=None,
        help=f"comma list of benchmarks to run (default: all of {', '.join(BENCHMARKS)})",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="where to record the figures (default: benchmarks/results.json, or "
        "benchmarks/.data/results-quick.json with --quick)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=DATA_DIR,
        help="where generated data goes while the benchmarks run (default: benchmarks/.data)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args.quick, args.only, args.results, args.workdir)


if __name__ == "__main__":
    sys.exit(main())
