"""The bookkeeping benchmark's attribution: a sample is Dagster's when the innermost frame of Dagster's or the
pipeline's code is Dagster's; the libraries either calls count as the caller's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from benchmarks.bookkeeping import PIPELINE_DIR, owner

SITE = "/venv/lib/python3.11/site-packages/"


def _stack(*paths: str) -> Any:
    """A stack of frames, outermost first, as the sampler sees one (each frame's file and the frame below it)."""
    frame = None
    for path in paths:
        frame = SimpleNamespace(f_code=SimpleNamespace(co_filename=path), f_back=frame)
    return frame


def test_a_sample_belongs_to_the_innermost_of_dagster_and_the_pipeline() -> None:
    run = (f"{PIPELINE_DIR}cli/common/runs.py", f"{SITE}dagster/_core/execution/api.py")
    asset = (*run, f"{PIPELINE_DIR}defs/ingestion/assets.py")
    assert owner(_stack(*run, f"{SITE}sqlalchemy/engine/base.py")) == "dagster"  # a library Dagster calls
    assert owner(_stack(*asset, f"{SITE}polars/dataframe/frame.py")) == "pipeline"  # a library the asset calls
    assert owner(_stack(*asset, f"{SITE}dagster_shared/serdes/serdes.py")) == "dagster"  # Dagster the asset calls
    assert owner(_stack("/usr/lib/python3.11/threading.py")) == "other"
    assert owner(None) == "other"
