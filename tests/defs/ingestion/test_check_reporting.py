"""A failing check is reported, never raised: its result, with JSON-safe examples, is recorded and the
partition lands.

(No ``from __future__ import annotations``: Dagster reads the test assets' annotations at definition time.)
"""

import json
import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.common.reporting import Landed, json_safe
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.common.specs import check_specs, partition_of
from pipeline.defs.ingestion.assets import land_partition
from pipeline.engine.checks import CHECKS, Check, PartitionContext, run_checks
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.pages import concatenated
from pipeline.engine.normalized import CONFLICTING_REPEAT, Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, Table
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import RequestStats
from tests.support.location import INGESTION_ASSETS, PARTITIONS
from tests.support.rewritten_markets import markets_rewritten
from tests.support.runs import DAY, shared_instance

PLATFORM = "kalshi"
MARKET = "KXTEST-26NOV21-T1"
CONTEXT = PartitionContext(PLATFORM, DAY, frozenset({MARKET}))
PARTITION = dg.MultiPartitionKey({"platform": PLATFORM, "date": DAY.isoformat()})
NOON = datetime.combine(DAY, time(12), UTC)


# -- the crash this file was written for: a duplicate market through the sandbox ----------------------------


# The markets answer holds its first market twice.
DuplicatingPipeline = markets_rewritten(lambda rows: pl.concat([rows, rows.head(1)]))


def _step_errors(result: dg.ExecuteInProcessResult) -> list[str]:
    return [e.step_failure_data.error.to_string() for e in result.get_step_failure_events()
            if e.step_failure_data.error is not None]


def test_a_duplicate_key_is_reported_as_a_failed_check_and_the_partition_lands(pipeline_env: Path) -> None:
    markets = [a for a in INGESTION_ASSETS if a.key.to_user_string() == "markets"]
    result = dg.materialize(markets, partition_key=PARTITION, resources={"pipeline": DuplicatingPipeline()},
                            instance=shared_instance(), raise_on_error=False)
    assert result.success, _step_errors(result)
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    unique = evaluations["unique_key"]
    assert not unique.passed
    assert unique.metadata["violations"].value == 1
    [example] = unique.metadata["examples"].value
    assert example["platform"] == PLATFORM and example["date"] == DAY.isoformat() and example["copies"] == 2
    [materialization] = result.asset_materializations_for_node("markets")
    landed = Lake(pipeline_env / "lake").read_partition("markets", PLATFORM, DAY)
    assert landed is not None and landed.height == materialization.metadata["dagster/row_count"].value
    assert landed.height - landed["id"].n_unique() == 1  # the duplicate landed too: the check says so


def test_a_duplicate_market_is_asked_for_once_and_the_partition_lands_whole(pipeline_env: Path) -> None:
    result = dg.materialize(INGESTION_ASSETS, partition_key=PARTITION, resources={"pipeline": DuplicatingPipeline()},
                            instance=shared_instance(), raise_on_error=False)
    assert result.success, _step_errors(result)
    evaluations = result.get_asset_check_evaluations()
    assert {(e.asset_key.to_user_string(), e.check_name) for e in evaluations if not e.passed} == {
        ("markets", "unique_key")}
    lake = Lake(pipeline_env / "lake")
    markets = lake.read_partition("markets", PLATFORM, DAY)
    assert markets is not None
    for table in ("trades", "price_history"):
        landed = lake.read_partition(table, PLATFORM, DAY)
        assert landed is not None and landed.height > 0, table
        assert set(landed["market_id"]) <= set(markets["id"]), table


# -- every check of every table, failed on purpose ----------------------------------------------------------


def _value(dtype: pl.DataType, number: float) -> Any:
    """A value of `dtype`, with `number` for every number in it (nested ones too)."""
    if isinstance(dtype, pl.Struct):
        return {f.name: _value(f.dtype, number) for f in dtype.fields}
    if isinstance(dtype, pl.List):
        return [_value(dtype.inner, number)]
    if isinstance(dtype, pl.Datetime):
        return NOON
    if dtype == pl.Date:
        return DAY
    if dtype == pl.Boolean:
        return True
    if dtype.is_numeric():
        return number
    return "x"


def _row(table: Table, row_id: str, number: float = 0.5, **changes: Any) -> pl.DataFrame:
    """One row of `table` that passes every check of the partition (numbers 0.5, times at noon, the
    partition's platform and market, enums their first value), but for `changes`; `row_id` names it."""
    values = {c.name: str(c.enum[0]) if c.enum else _value(c.dtype, number) for c in table.columns}
    values.update(platform=PLATFORM, date=DAY, **({"market_id": MARKET} if "market_id" in values else {}))
    values[_row_id_column(table)] = row_id
    values.update(changes)
    return pl.DataFrame([values], schema=table.polars_schema, orient="row")


def _row_id_column(table: Table) -> str:
    """The last text column of the key: the one that tells two rows of a market apart."""
    key = [c for c in table.primary_key if table.polars_schema[c] == pl.String and c != "platform"]
    return key[-1]


def _breaking(check: Check, table: Table) -> Normalized:
    """Rows of `table`, or rejects, that fail `check`, each named `bad-<check>`."""
    if check.name == "repeats_agree":
        rejects = pl.DataFrame({"raw": [f'{{"id": "bad-{check.name}"}}'], "reason": [CONFLICTING_REPEAT],
                                "_fetched_at": [NOON]}, schema=REJECTS_SCHEMA)
        return Normalized(_row(table, "unused").clear(), rejects)
    return Normalized(_breaking_rows(check, table), pl.DataFrame(schema=REJECTS_SCHEMA))


def _breaking_rows(check: Check, table: Table) -> pl.DataFrame:
    """Rows of `table` that fail `check`, each named `bad-<check>`. A check that this does not know fails
    the test: a new check needs a way to break it here."""
    row_id = f"bad-{check.name}"
    if check.name == "required_not_null":
        column = next(c for c in table.required_columns if c not in (*table.primary_key, "platform", "date"))
        return _row(table, row_id, **{column: None})
    if check.name == "unique_key":
        return pl.concat([_row(table, row_id), _row(table, row_id)])
    if check.name.endswith("_enum"):
        return _row(table, row_id, **{check.name.removesuffix("_enum"): "not-in-the-enum"})
    if check.name == "prices_in_unit_interval":
        return pl.concat([_row(table, row_id, number=1.5), _row(table, f"{row_id}-nan", number=math.nan)])
    if check.name == "sizes_positive":
        return pl.concat([_row(table, row_id, size=-1.0), _row(table, f"{row_id}-zero", size=0.0)])
    if check.name == "timestamps_inside_day" and table.time_column is not None:
        return _row(table, row_id, **{table.time_column: NOON - timedelta(days=1)})
    if check.name == "price_keys_name_outcomes":
        prices = _value(table.polars_schema["current_prices"], 0.5)
        prices[0]["key"] = "no-such-outcome"
        return _row(table, row_id, current_prices=prices)
    if check.name == "references_partition_markets":
        return _row(table, row_id, market_id="no-such-market")
    raise AssertionError(f"{table.name}.{check.name}: no way to break it is known; add one to _breaking")


class _NoRequests:
    """What `land_partition` asks of the source after the rows are in: the requests made (none here) and coverage."""

    def requests(self) -> RequestStats:
        return RequestStats()

    def coverage(self) -> Coverage:
        return Coverage()


def _landing_asset(table: str, normalized: Normalized) -> dg.AssetsDefinition:
    """The ingestion asset's landing (`land_partition`: lake, checks, report) of `rows`, with the asset's checks."""

    @dg.asset(name=table, partitions_def=PARTITIONS, check_specs=check_specs(table, PARTITIONS))
    def landing(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        yield from land_partition(context, pipeline, table, PartitionContext(platform, day, CONTEXT.market_ids),
                                  normalized, _NoRequests())  # type: ignore[arg-type]

    return landing


def test_every_check_of_every_table_fails_is_reported_with_examples_and_the_partitions_land(
    pipeline_env: Path,
) -> None:
    good = {name: _row(table, "good") for name, table in TABLES.items()}
    for name, rows in good.items():  # the rows the breakers start from pass every check
        assert [o.name for o in run_checks(name, rows, CONTEXT, pl.DataFrame(schema=REJECTS_SCHEMA))
                if not o.passed] == [], name
    frames = {name: concatenated(name, [Normalized(good[name], pl.DataFrame(schema=REJECTS_SCHEMA)),
                                        *(_breaking(c, table) for c in CHECKS[name] if not c.reconciles)])
              for name, table in TABLES.items()}

    result = dg.materialize([_landing_asset(name, rows) for name, rows in frames.items()], partition_key=PARTITION,
                            resources={"pipeline": PipelineResource()}, instance=shared_instance(),
                            raise_on_error=False)

    assert result.success, _step_errors(result)
    evaluations = {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {(name, check.name) for name in TABLES for check in CHECKS[name]}
    reconciling = {(name, c.name) for name in TABLES for c in CHECKS[name] if c.reconciles}
    for (name, check), evaluation in evaluations.items():
        if (name, check) in reconciling:  # no evidence to hold rows against here: tests/engine/test_reconciliation.py
            assert evaluation.passed, (name, check)
            continue
        assert not evaluation.passed, (name, check)
        blocking = next(c.blocking for c in CHECKS[name] if c.name == check)
        assert evaluation.severity == (dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN)
        assert evaluation.metadata["violations"].value >= 1, (name, check)
        examples = evaluation.metadata["examples"].value
        text = json.dumps(examples, allow_nan=False)  # strict JSON: what the UI can parse
        assert f"bad-{check}" in text, (name, check, examples)
    lake = Lake(pipeline_env / "lake")
    for name, normalized in frames.items():
        landed = lake.read_partition(name, PLATFORM, DAY)
        assert landed is not None and landed.height == normalized.rows.height, name
        [materialization] = result.asset_materializations_for_node(name)
        assert materialization.metadata["dagster/row_count"].value == normalized.rows.height


# -- the conversion itself -------------------------------------------------------------------------------------


def test_json_safe_turns_row_values_into_strict_json() -> None:
    row = {
        "at": datetime(2026, 11, 21, 12, 30, tzinfo=UTC),
        "day": date(2026, 11, 21),
        "time": time(9, 5),
        "amount": Decimal("1.10"),
        "not_a_number": Decimal("NaN"),
        "prices": [0.5, math.nan, math.inf, -math.inf],
        "raw": b"caf\xc3\xa9 \xff",
        "waited": timedelta(seconds=90),
        "nested": {"points": ({"at": date(2026, 1, 2), "tags": {"a"}},), 1: None},
        "plain": [True, 3, "text", None],
    }
    safe = json_safe(row)
    assert json.loads(json.dumps(safe, allow_nan=False)) == safe
    assert safe == {
        "at": "2026-11-21T12:30:00+00:00",
        "day": "2026-11-21",
        "time": "09:05:00",
        "amount": "1.10",
        "not_a_number": "NaN",
        "prices": [0.5, "NaN", "Infinity", "-Infinity"],
        "raw": "café \\xff",
        "waited": "0:01:30",
        "nested": {"points": [{"at": "2026-01-02", "tags": ["a"]}], "1": None},
        "plain": [True, 3, "text", None],
    }


def test_the_ui_says_which_checks_hold_back_the_models() -> None:
    """Issue 35, point 8: Dagster lists every ingestion check as non-blocking (a failure must not skip the
    partition's other tables); each check's description says what a failure does in this pipeline."""
    partitions = dg.StaticPartitionsDefinition(["p"])
    for table in TABLES:
        specs = {spec.name: spec for spec in check_specs(table, partitions)}
        for check in CHECKS[table]:
            said = specs[check.name].description or ""
            assert said.startswith(check.description)
            expected = "Blocking for the SQL models" if check.blocking else "A warning (severity WARN)"
            assert expected in said, (table, check.name, said)
