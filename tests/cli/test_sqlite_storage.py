"""pmw's runs are recorded through KeptEngineSqliteStorage (pipeline.cli.common.sqlite_storage), and Dagster reads
them back unchanged: a plain instance on the same home (the UI's, the daemon's) sees every event, materialisation
and check result, in run databases that are Dagster's own."""

import sqlite3
from pathlib import Path

import dagster as dg
import pytest
from dagster._serdes import ConfigurableClassData  # not exported: what an instance's storage settings are read into

from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.common.sqlite_storage import (
    DAGSTER_SQLITE,
    BatchingInstance,
    KeptEngineEventLogStorage,
    kept_engine_storage,
)

PARTITIONS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.asset(partitions_def=PARTITIONS, check_specs=[dg.AssetCheckSpec("positive", asset="numbers")])
def numbers(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"dagster/row_count": 3, "partition": context.partition_key},
                                check_results=[dg.AssetCheckResult(passed=context.partition_key == "a")])


def _alembic_revision(database: Path) -> list[tuple[str]]:
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT version_num FROM alembic_version").fetchall()


def test_pmw_runs_are_recorded_at_less_cost_and_read_back_by_dagster(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = pmw_instance(tmp_path / "data")
    assert isinstance(instance.event_log_storage, KeptEngineEventLogStorage)
    assert isinstance(instance, BatchingInstance)  # the events a run plans stored in one transaction
    runs = [dg.materialize([numbers], instance=instance, partition_key=key, raise_on_error=False).run_id
            for key in ("a", "b")]
    home = tmp_path / "data" / "dagster_home"
    with dg.DagsterInstance.from_config(str(home)) as dagster:  # Dagster's own storage on the same home
        assert type(dagster.event_log_storage).__name__ == "SqliteEventLogStorage"
        for run_id in runs:
            assert dagster.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS  # type: ignore[union-attr]
            types = [e.dagster_event_type for e in dagster.all_logs(run_id) if e.is_dagster_event]
            assert types.count(dg.DagsterEventType.ASSET_MATERIALIZATION) == 1
            assert types.count(dg.DagsterEventType.ASSET_CHECK_EVALUATION) == 1
            assert types.count(dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED) == 1
            assert types.count(dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED) == 1
        records = dagster.fetch_materializations(dg.AssetKey("numbers"), limit=10).records
        assert sorted(r.partition_key for r in records) == ["a", "b"]
        checks = dagster.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("numbers"), "positive"), limit=10)
        assert sorted(c.status.value for c in checks) == ["FAILED", "SUCCEEDED"]
        # A run's database copied from the template is what Dagster makes: the same migrations' revision stamped.
        plain = dg.materialize([numbers], instance=dagster, partition_key="a").run_id
    shards = home / "history" / "runs"
    assert _alembic_revision(shards / f"{runs[1]}.db") == _alembic_revision(shards / f"{plain}.db") != []


def test_a_check_result_is_linked_to_its_own_runs_materialisation(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The partition's latest materialisation, which the storage looks up once per run for its check results, is
    looked up again by the next run of the partition in the same process."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = pmw_instance(tmp_path / "data")
    for _ in range(2):
        run_id = dg.materialize([numbers], instance=instance, partition_key="a").run_id
        [evaluation] = [e.dagster_event.event_specific_data for e in instance.all_logs(run_id)
                        if e.dagster_event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION]
        assert evaluation.target_materialization_data.run_id == run_id  # type: ignore[union-attr]


def test_outside_a_run_the_latest_materialisation_is_looked_up_as_it_lands(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Between its runs, a pmw process (`pmw status`, say) sees what another process has materialised since."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = pmw_instance(tmp_path / "data")
    latest_of_a = dg.AssetRecordsFilter(asset_key=dg.AssetKey("numbers"), asset_partitions=["a"])
    first = dg.materialize([numbers], instance=instance, partition_key="a").run_id
    assert instance.fetch_materializations(latest_of_a, limit=1).records[0].run_id == first
    with dg.DagsterInstance.from_config(str(tmp_path / "data" / "dagster_home")) as dagster:  # another process's
        second = dg.materialize([numbers], instance=dagster, partition_key="a").run_id
    assert instance.fetch_materializations(latest_of_a, limit=1).records[0].run_id == second


def test_only_dagsters_default_sqlite_storage_is_replaced() -> None:
    default = ConfigurableClassData(*DAGSTER_SQLITE, "base_dir: /x\n")
    postgres = ConfigurableClassData("dagster_postgres", "DagsterPostgresStorage", "{}\n")
    replaced = kept_engine_storage(default)
    assert replaced is not None and replaced.class_name == "KeptEngineSqliteStorage"
    assert replaced.config_yaml == default.config_yaml
    assert kept_engine_storage(postgres) is postgres
    assert kept_engine_storage(None) is None
