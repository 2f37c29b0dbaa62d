"""PMW_BUDGET_URL: where the request budget is kept, read from the environment without ever showing a password.
(The budgets on real PostgreSQL and Redis servers: tests/reliability/test_shared_budget.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.engine.config import ConfigError, Secret, Settings
from pipeline.engine.schema import Source
from pipeline.engine.sources.budget_store import BudgetStore
from pipeline.engine.sources.factory import open_unified_source

PASSWORD = "hunter2-budget-secret"


def test_without_a_url_the_budget_stays_in_the_sqlite_file_of_pmw_rate_limit_db(tmp_path: Path) -> None:
    settings = Settings.from_env({"PMW_RATE_LIMIT_DB": str(tmp_path / "b.sqlite")})
    assert settings.budget_url is None
    assert BudgetStore.of(settings.budget_url, settings.rate_limit_db) == BudgetStore(path=tmp_path / "b.sqlite")
    named = Settings.from_env({"PMW_BUDGET_URL": f"sqlite://{tmp_path}/named.sqlite"})
    assert BudgetStore.of(named.budget_url, named.rate_limit_db) == BudgetStore(path=tmp_path / "named.sqlite")


@pytest.mark.parametrize(("url", "scheme", "shown"), [
    (f"postgresql://pmw:{PASSWORD}@db.internal:5432/budget?sslmode=require", "postgresql",
     "postgresql://db.internal:5432/budget"),
    (f"redis://:{PASSWORD}@cache.internal:6379/2", "redis", "redis://cache.internal:6379/2"),
])
def test_a_server_url_is_kept_secret_and_shown_without_credentials(url: str, scheme: str, shown: str) -> None:
    settings = Settings.from_env({"PMW_BUDGET_URL": url})
    assert PASSWORD not in repr(settings)
    store = BudgetStore.of(settings.budget_url, settings.rate_limit_db)
    assert (store.scheme, store.shown) == (scheme, shown)
    assert PASSWORD not in repr(store)


@pytest.mark.parametrize(("raw", "message"), [
    (f"mysql://u:{PASSWORD}@h/db", "PMW_BUDGET_URL must be sqlite:///FILE, postgresql://... or redis://..., "
                                   "got a URL of scheme 'mysql'"),
    (PASSWORD, "PMW_BUDGET_URL must be sqlite:///FILE, postgresql://... or redis://..., got no URL"),
    ("sqlite://budget.sqlite", "PMW_BUDGET_URL=sqlite:///FILE names a file by its absolute path"),
])
def test_a_bad_budget_url_is_refused_without_quoting_it(raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"PMW_BUDGET_URL": raw})
    assert str(raised.value).startswith(message)
    assert PASSWORD not in str(raised.value)


def test_the_unified_budget_opens_in_the_store_the_settings_name(tmp_path: Path) -> None:
    settings = Settings(source=Source.API, api_url="http://api.test", api_key=Secret("sk-test"),
                        data_dir=tmp_path / "data", budget_url=Secret(f"sqlite://{tmp_path}/shared.sqlite"))
    with open_unified_source(settings) as source:
        assert source.http.budget is not None
        assert source.http.budget.store == BudgetStore(path=tmp_path / "shared.sqlite")
    assert (tmp_path / "shared.sqlite").is_file()
