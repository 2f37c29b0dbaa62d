"""The pipeline's settings are parsed once per run and kept: an environment that changes mid-run changes nothing.

(No ``from __future__ import annotations``: Dagster reads the test assets' annotations at definition time.)
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import ConfigError, Settings, check_data_dir
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.schema import TABLES, Source
from pipeline.engine.sources.factory import open_unified_source
from tests.support.location import INGESTION_ASSETS
from tests.support.runs import DAY, lake_tables, shared_instance

# What the environment says once a test asset has meddled with it: a re-read would fail (api without its URL
# and key) or land elsewhere.
MEDDLED = {"PMW_SOURCE": "api", "PMW_SANDBOX_SEED": "99"}


def _meddle(monkeypatch: pytest.MonkeyPatch, elsewhere: Path) -> None:
    for name, value in {**MEDDLED, "PMW_DATA_DIR": str(elsewhere)}.items():
        monkeypatch.setenv(name, value)


def _two_assets(seen: dict[str, Settings], monkeypatch: pytest.MonkeyPatch,
                elsewhere: Path) -> list[dg.AssetsDefinition]:
    """`first` notes its settings then changes the environment; `second`, after it in the same run, notes its
    settings and writes a marker file into its lake."""

    @dg.asset
    def first(pipeline: PipelineResource) -> None:
        seen["first"] = pipeline.settings()
        _meddle(monkeypatch, elsewhere)

    @dg.asset(deps=[first])
    def second(pipeline: PipelineResource) -> None:
        seen["second"] = pipeline.settings()
        pipeline.lake().root.mkdir(parents=True, exist_ok=True)
        (pipeline.lake().root / "second-was-here").touch()

    return [first, second]


def test_a_run_keeps_the_settings_it_started_with(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Settings] = {}
    result = dg.materialize(_two_assets(seen, monkeypatch, tmp_path / "elsewhere"),
                            resources={"pipeline": PipelineResource()}, instance=shared_instance())
    assert result.success
    assert seen["second"] is seen["first"]
    assert seen["first"].data_dir == pipeline_env and seen["first"].source == Source.SANDBOX
    assert (pipeline_env / "lake" / "second-was-here").exists()
    assert not (tmp_path / "elsewhere").exists()


def test_the_ingestion_assets_of_one_run_land_where_the_run_started(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment changes as soon as `markets` has read its source; the four assets after it still read
    the sandbox and land next to it."""
    elsewhere = tmp_path / "elsewhere"

    class MeddlingPipeline(PipelineResource):
        @contextmanager
        def source(self, platform: str) -> Iterator[PartitionSource]:
            with super().source(platform) as source:
                yield source
            _meddle(monkeypatch, elsewhere)

    result = dg.materialize(
        INGESTION_ASSETS,
        partition_key=dg.MultiPartitionKey({"platform": "kalshi", "date": DAY.isoformat()}),
        resources={"pipeline": MeddlingPipeline()},
        instance=shared_instance(),
        raise_on_error=False,
    )
    assert result.success
    assert set(lake_tables(pipeline_env, "kalshi")) == set(TABLES)
    assert not elsewhere.exists()


def test_given_settings_are_kept_through_the_run_and_the_environment_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PMW_SOURCE", "no-such-source")  # reading the environment would raise
    given = Settings(data_dir=tmp_path / "given", sandbox_seed=5)
    seen: dict[str, Settings] = {}
    result = dg.materialize(_two_assets(seen, monkeypatch, tmp_path / "elsewhere"),
                            resources={"pipeline": PipelineResource(base_settings=given)},
                            instance=shared_instance())
    assert result.success
    assert seen["first"] is given and seen["second"] is given
    assert (tmp_path / "given" / "lake" / "second-was-here").exists()


def test_overrides_replace_their_own_fields_only(pipeline_env: Path, tmp_path: Path) -> None:
    from_env = PipelineResource().settings()
    overridden = PipelineResource(data_dir=str(tmp_path / "other"), sandbox_faults="slow").settings()
    assert (overridden.data_dir, overridden.sandbox_faults) == (tmp_path / "other", "slow")
    assert overridden.sandbox_seed == from_env.sandbox_seed and overridden.rate_limit_db == from_env.rate_limit_db
    given = Settings(sandbox_seed=5)
    moved = PipelineResource(base_settings=given, data_dir="x").settings()
    assert moved == Settings(sandbox_seed=5, data_dir=Path("x"))
    assert PipelineResource(base_settings=given).settings() is given


def test_outside_a_run_the_settings_are_read_once(pipeline_env: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    resource = PipelineResource()
    settings = resource.settings()
    _meddle(monkeypatch, tmp_path / "elsewhere")
    assert resource.settings() is settings and resource.lake().root == pipeline_env / "lake"


def test_a_bad_setting_fails_the_run_at_its_start_naming_the_variable(pipeline_env: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMW_MAX_ATTEMPTS", "several")
    ran: list[str] = []

    @dg.asset
    def untouched(pipeline: PipelineResource) -> None:
        ran.append("untouched")

    with pytest.raises(Exception) as raised:
        dg.materialize([untouched], resources={"pipeline": PipelineResource()},
                       instance=shared_instance())
    causes = [raised.value]
    while causes[-1].__cause__ is not None:
        causes.append(causes[-1].__cause__)
    assert any(isinstance(c, ConfigError) and str(c) == "PMW_MAX_ATTEMPTS must be a whole number, got 'several'"
               for c in causes), causes
    assert ran == []


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PMW_SOURCE": "ftp"}, "PMW_SOURCE must be one of sandbox, api, direct, got 'ftp'"),
        ({"PMW_SOURCE": "api", "PMW_API_KEY": "k"}, "PMW_SOURCE=api needs PMW_API_URL"),
        ({"PMW_SOURCE": "api", "PMW_API_URL": "https://x"}, "PMW_SOURCE=api needs PMW_API_KEY"),
        ({"PMW_API_URL": "x.org"}, "PMW_API_URL must start with http:// or https://, got 'x.org'"),
        ({"PMW_RATE_LIMIT_PER_MIN": "0"}, "PMW_RATE_LIMIT_PER_MIN must be at least 1, got 0"),
        ({"PMW_RATE_WINDOW_S": "soon"}, "PMW_RATE_WINDOW_S must be a number of seconds, got 'soon'"),
        ({"PMW_RATE_WINDOW_S": "0"}, "PMW_RATE_WINDOW_S must be more than 0, got 0.0"),
        ({"PMW_MAX_BACKOFF_S": "-1"}, "PMW_MAX_BACKOFF_S must be at least 0, got -1.0"),
        ({"PMW_HTTP_TIMEOUT_S": "0"}, "PMW_HTTP_TIMEOUT_S must be more than 0, got 0.0"),
        ({"PMW_HTTP_TIMEOUT_S": "a while"}, "PMW_HTTP_TIMEOUT_S must be a number of seconds, got 'a while'"),
        ({"PMW_SANDBOX_END": "21/11/2026"}, "PMW_SANDBOX_END must be a day as YYYY-MM-DD, got '21/11/2026'"),
        ({"PMW_PLATFORMS": "kalshi,manifold"}, "PMW_PLATFORMS: unknown platform 'manifold'"),
        ({"PMW_PRICE_POINT_LABEL": "middle"}, "PMW_PRICE_POINT_LABEL must be one of period_start, period_end, got"),
        ({"PMW_HTTP_DEADLINE_S": "0"}, "PMW_HTTP_DEADLINE_S must be more than 0, got 0.0"),
        ({"PMW_LAKE_DEADLINE_S": "0"}, "PMW_LAKE_DEADLINE_S must be more than 0, got 0.0"),
        ({"PMW_MAX_BODY_MB": "lots"}, "PMW_MAX_BODY_MB must be a whole number, got 'lots'"),
        ({"PMW_MAX_PAGES": "0"}, "PMW_MAX_PAGES must be at least 1, got 0"),
        ({"PMW_SHRINK_TOLERANCE": "half"}, "PMW_SHRINK_TOLERANCE must be a share between 0 and 1, got 'half'"),
        ({"PMW_MAX_SHRINK": "0.5"}, "PMW_MAX_SHRINK is now PMW_SHRINK_TOLERANCE (a share between 0 and 1, default "
                                    "0.05): rename it, got PMW_MAX_SHRINK='0.5'"),
        ({"PMW_MAX_REJECT_SHARE": "1.5"}, "PMW_MAX_REJECT_SHARE must be a share between 0 and 1, got 1.5"),
        ({"PMW_ALLOW_SHRINK": "maybe"}, "PMW_ALLOW_SHRINK must be 1 or 0 (true or false), got 'maybe'"),
    ],
)
def test_a_bad_setting_is_named_with_its_value_and_what_was_expected(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(message)


def test_the_replacement_settings_are_read_with_their_defaults() -> None:
    defaults = Settings.from_env({})
    assert (defaults.shrink_tolerance, defaults.max_reject_share, defaults.allow_shrink) == (0.05, 0.5, False)
    chosen = Settings.from_env({"PMW_SHRINK_TOLERANCE": "0.2", "PMW_MAX_REJECT_SHARE": "0.05",
                                "PMW_ALLOW_SHRINK": "true"})
    assert (chosen.shrink_tolerance, chosen.max_reject_share, chosen.allow_shrink) == (0.2, 0.05, True)


def test_the_page_bound_is_read_with_its_default_and_reaches_the_http_layer(tmp_path: Path) -> None:
    assert Settings.from_env({}).max_pages == 20_000
    settings = Settings.from_env({"PMW_SOURCE": "api", "PMW_API_URL": "http://api.test", "PMW_API_KEY": "sk-test",
                                  "PMW_MAX_PAGES": "7", "PMW_DATA_DIR": str(tmp_path),
                                  "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite")})
    with open_unified_source(settings) as source:  # no request is made
        assert source.http.max_pages == 7


def test_an_asset_only_the_unified_api_serves_fails_its_step_under_the_direct_source_saying_what_to_set(
    tmp_path: Path,
) -> None:
    direct = PipelineResource(base_settings=Settings.from_env({"PMW_SOURCE": "direct",
                                                               "PMW_DATA_DIR": str(tmp_path)}))
    with pytest.raises(dg.Failure, match=r"^trader profiles read the unified API: set PMW_SOURCE=api \(or sandbox\)$"):
        direct.unified_api_settings("trader profiles")
    unified = PipelineResource(base_settings=Settings.from_env({"PMW_SOURCE": "sandbox",
                                                                "PMW_DATA_DIR": str(tmp_path)}))
    assert unified.unified_api_settings("trader profiles").source == Source.SANDBOX


def test_a_data_dir_that_is_a_file_or_not_writable_is_named_as_such(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with pytest.raises(ConfigError, match=r"^PMW_DATA_DIR must be a folder, got '.*/a-file', which is a file$"):
        check_data_dir(a_file, writable=False)
    with pytest.raises(ConfigError, match=r"got '.*/a-file/data', inside '.*/a-file', which is a file$"):
        check_data_dir(a_file / "data", writable=True)
    check_data_dir(tmp_path / "new" / "data", writable=True)  # made when first written
    monkeypatch.setattr("os.access", lambda path, mode: False)
    check_data_dir(tmp_path, writable=False)  # the commands that only read need no write permission
    with pytest.raises(ConfigError, match=r"^PMW_DATA_DIR must be a folder this user can write, got '.*', which is "
                                          r"not writable$"):
        check_data_dir(tmp_path, writable=True)
    with pytest.raises(ConfigError, match=r"got '.*/new/data', inside '.*', which is not writable$"):
        check_data_dir(tmp_path / "new" / "data", writable=True)
