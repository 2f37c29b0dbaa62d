"""What a benchmark reports: a table to print, its figures for results.json, and its targets, met or not."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = ("polars", "pyarrow", "duckdb", "orjson", "numpy", "dagster", "pydantic", "pandas")


class BenchmarkUnavailable(RuntimeError):
    """A benchmark cannot run here (what it needs cannot be installed, a tool it measures failed): one line."""


@dataclass(frozen=True)
class Target:
    """One target of the issue, whether this run met it, and by how much."""

    description: str
    met: bool
    detail: str


@dataclass(frozen=True)
class Report:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    figures: dict[str, Any]
    targets: list[Target]
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The title, the table with aligned columns, then one line per target and note."""
        cells = [self.columns, *[[_cell(value) for value in row] for row in self.rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = [self.title, ""]
        for n, row in enumerate(cells):
            lines.append(
                "  ".join(
                    text.rjust(width) if n else text.ljust(width) for text, width in zip(row, widths, strict=True)
                )
            )
            if n == 0:
                lines.append("  ".join("-" * width for width in widths))
        lines.append("")
        lines += [f"target: {t.description}: {'met' if t.met else 'MISSED'} ({t.detail})" for t in self.targets]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "figures": self.figures,
            "targets": [asdict(t) for t in self.targets],
            "notes": self.notes,
        }


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def machine() -> dict[str, Any]:
    """Where the figures come from: CPU, cores, memory, Python and the versions of the libraries that matter."""
    return {
        "cpu": _cpu_model(),
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "libraries": {name: _version(name) for name in LIBRARIES},
    }


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def write_results(path: Path, quick: bool, reports: list[Report]) -> None:
    """Record the reports in ``path``, keeping the other benchmarks of an earlier run of the same mode."""
    mode = "quick" if quick else "full"
    earlier = json.loads(path.read_text()) if path.exists() else {}
    benchmarks = earlier.get("benchmarks", {}) if earlier.get("mode") == mode else {}
    benchmarks.update({report.name: report.as_json() for report in reports})
    results = {
        "mode": mode,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "pmw bench" + (" --quick" if quick else ""),
        "machine": machine(),
        "benchmarks": benchmarks,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
