from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pmw_sandbox import SandboxApp, SandboxConfig, plug, sandbox_client
from tests.support.servers import S3_TEST_CREDENTIALS, postgres_server, postgres_template, redis_server, s3_server
from tests.support.world import PIPELINE_WORLD, WORLD, FakeClock, pipeline_sandbox


def pytest_configure() -> None:
    """The partitions start on a fixed day, before every test world, whatever the day the suite runs on (by
    default they start at the sandbox world's first day, a week before yesterday, which moves)."""
    os.environ.setdefault("PMW_START_DATE", "2025-01-01")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow first, so that the workers of `-n auto` (pytest-xdist hands tests out in this
    order as workers free up) do not end with one of them still running a long test while the others idle."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def pipeline_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private data dir and budget, the in-process sandbox of the pipeline's test world, fast retries."""
    for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMW_SOURCE", "sandbox")
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PMW_SANDBOX_SEED", str(PIPELINE_WORLD.seed))
    monkeypatch.setenv("PMW_SANDBOX_END", PIPELINE_WORLD.end_day.isoformat())
    monkeypatch.setenv("PMW_RATE_LIMIT_DB", str(tmp_path / "budget.sqlite"))
    monkeypatch.setenv("PMW_MAX_BACKOFF_S", "0.01")
    monkeypatch.setattr(plug, "sandbox_app", pipeline_sandbox)
    pipeline_sandbox.cache_clear()
    yield tmp_path / "data"
    pipeline_sandbox.cache_clear()


@pytest.fixture(scope="session")
def shared_app() -> SandboxApp:
    """One sandbox for read-only tests (no rate limit, no faults)."""
    return SandboxApp(SandboxConfig(world=WORLD))


@pytest.fixture
def client(shared_app: SandboxApp) -> Iterator[httpx.Client]:
    with sandbox_client(shared_app) as c:
        yield c


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[str]:
    """A PostgreSQL server of this worker's, for the whole session (tests.support.servers); its template
    folder is made once for every worker."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    with postgres_server(postgres_template(shared)) as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis server of this worker's, for the whole session (tests.support.servers)."""
    with redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """An S3-protocol server of this worker's, for the whole session (tests.support.servers)."""
    with s3_server() as url:
        yield url


@pytest.fixture
def s3_lake_url(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the tests' S3 server, the environment set as a user sets it for that server (endpoint,
    credentials, region), and the URL of a lake in it (not set as PMW_LAKE_URL: the test says where it goes)."""
    import s3fs

    env = {"AWS_ENDPOINT_URL": s3_endpoint, **S3_TEST_CREDENTIALS}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bucket = f"pmw-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(bucket)
    return f"s3://{bucket}/lake"
