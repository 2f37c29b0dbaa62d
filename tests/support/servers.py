"""Real PostgreSQL and Redis servers for the tests, from Debian's packages (`.ci/run` installs them), each
started in a temporary folder on 127.0.0.1 as an unprivileged user (PostgreSQL refuses to run as root), and
stopped at the end; and an S3-protocol server, moto's standalone server (`moto[server]`, of the `[dev]` extras).
A missing server program fails the test that needs it: it is never skipped.

PostgreSQL's `initdb` costs seconds: it runs once per test session into a template folder that the xdist
workers share (under a lock), and each worker's server starts on a copy of it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

UNPRIVILEGED_USER = "nobody"  # who the servers run as when the tests run as root
START_TIMEOUT_S = 30.0


def _postgres_bin() -> Path:
    """The newest PostgreSQL's programs (Debian keeps them under /usr/lib/postgresql/<version>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)")
    return found[-1].parent


def _redis_server() -> str:
    found = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else "")
    if not found:
        pytest.fail("Redis is not installed (apt-get install redis-server; .ci/run does it)")
    return found


def _as_unprivileged() -> dict[str, object]:
    """Popen's arguments that run a server as UNPRIVILEGED_USER when the tests run as root, else as the tests."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(UNPRIVILEGED_USER)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _owned_temp_dir(prefix: str) -> Path:
    """A folder the server's user owns, outside pytest's root-only temporary folders."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        user = pwd.getpwnam(UNPRIVILEGED_USER)
        os.chown(folder, user.pw_uid, user.pw_gid)
    return folder


def _chown_tree(root: Path) -> None:
    if os.geteuid() != 0:
        return
    user = pwd.getpwnam(UNPRIVILEGED_USER)
    for path in [root, *root.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def free_port() -> int:
    """A port nothing listens on now (the servers below take a port number, not 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    pytest.fail(f"the server did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S} s")


def _wait_for_postgres(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Listening is not yet accepting queries: pg_isready says when the server is done starting up."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"PostgreSQL exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        ready = subprocess.run([str(_postgres_bin() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)],
                               check=False)
        if ready.returncode == 0:
            return
        time.sleep(0.05)
    pytest.fail(f"PostgreSQL did not accept connections within {START_TIMEOUT_S} s:\n{log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


def postgres_template(shared_tmp: Path) -> Path:
    """An `initdb` folder (user postgres, no password on loopback), made once per session for every worker."""
    template = shared_tmp / "postgres-template"
    with FileLock(str(template) + ".lock"):
        if not (template / "PG_VERSION").exists():
            made = _owned_temp_dir("pmw-initdb-")
            data = made / "data"
            run = subprocess.run([str(_postgres_bin() / "initdb"), "-D", str(data), "-U", "postgres",
                                  "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
                                 capture_output=True, text=True, timeout=120, **_as_unprivileged())  # type: ignore[call-overload]
            assert run.returncode == 0, run.stdout + run.stderr
            shutil.copytree(data, template, symlinks=True)
            shutil.rmtree(made)
    return template


@contextlib.contextmanager
def postgres_server(template: Path) -> Iterator[str]:
    """PostgreSQL on 127.0.0.1 over a copy of `template`, durability off (a test's data is thrown away);
    yields the URL of its database `postgres`."""
    folder = _owned_temp_dir("pmw-postgres-")
    data = folder / "data"
    shutil.copytree(template, data, symlinks=True)
    _chown_tree(data)
    data.chmod(0o700)
    port, log = free_port(), folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(_postgres_bin() / "postgres"), "-D", str(data), "-p", str(port), "-k", str(folder),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=out, stderr=subprocess.STDOUT, **_as_unprivileged(),  # type: ignore[call-overload]
        )
    with _serving(process, port, log, folder):
        _wait_for_postgres(port, process, log)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"


@contextlib.contextmanager
def redis_server(port: int | None = None) -> Iterator[str]:
    """Redis on 127.0.0.1 (on `port`, to start one again where another was), keeping nothing on disk; yields its
    URL."""
    folder = _owned_temp_dir("pmw-redis-")
    port, log = port or free_port(), folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
             "--appendonly", "no", "--protected-mode", "yes"],
            stdout=out, stderr=subprocess.STDOUT, **_as_unprivileged(),  # type: ignore[call-overload]
        )
    with _serving(process, port, log, folder):
        yield f"redis://127.0.0.1:{port}/0"


# The credentials the tests' S3 server accepts (moto takes any) and the region its buckets are made in.
S3_TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "pmw-test-key", "AWS_SECRET_ACCESS_KEY": "pmw-test-secret",
                       "AWS_REGION": "us-east-1"}


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1, holding its buckets in memory; yields its endpoint URL."""
    if importlib.util.find_spec("moto.server") is None:
        pytest.fail("moto's server is not installed (pip install -e '.[dev]' installs moto[server])")
    folder = Path(tempfile.mkdtemp(prefix="pmw-s3-"))
    port, log = free_port(), folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT)
    with _serving(process, port, log, folder):
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def _serving(process: subprocess.Popen[bytes], port: int, log: Path, folder: Path) -> Iterator[None]:
    """While a started server answers on `port`: waits for it, then stops it and removes its folder, whatever
    happened meanwhile."""
    try:
        _wait_for_port(port, process, log)
        yield
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)
