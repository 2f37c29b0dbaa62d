"""Security: the API key leaks nowhere, API identifiers never become paths or SQL, the sandbox stays on
loopback, TLS certificates are verified.

Each test fails when its guard is removed (HttpLayer.redact, Secret's masked repr, the table and platform
validation and the inside-the-root check of pipeline.engine.lake.store, the escaping of SQL string literals in
pipeline.engine.warehouse.views, the sandbox's default host, httpx's certificate verification): the closing note of
issue 7 records each removal and the failure it caused.

API values never enter SQL as text: they land in Parquet and are compared through bound parameters. The
only SQL identifiers are the schema module's names and SQL model names checked against
`[a-z_][a-z0-9_]*` (pipeline.engine.warehouse.project), so quoting identifiers is defence in depth that no input from
the API can reach, and no test here fails without it.
"""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import orjson
import polars as pl
import pytest

from pipeline.cli.main import build_parser
from pipeline.engine.config import Secret
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.liveness import live_records
from pipeline.engine.sources.redaction import REDACTED
from pipeline.engine.warehouse.views import connect_read_only
from pmw_sandbox import SandboxConfig
from pmw_sandbox.app import SandboxResponse
from pmw_sandbox.server import SandboxServer
from tests.support.loopback import LoopbackServer
from tests.support.served import (
    DAY,
    SECRET,
    SMALL_WORLD,
    WatchedSandbox,
    api_env,
    assert_lake_consistent,
    backfill_args,
    backfill_process,
    lake_rows,
    run_backfill,
)

# -- the key -----------------------------------------------------------------------------------------------


class EchoingSandbox(WatchedSandbox):
    """The sandbox, except that errors echo the request's headers, key included, as careless servers do:
    Kalshi's trades answer 503 with the echo in a JSON Error (retried, logged, then given up), Polymarket's
    price history 400 with the echo in an HTML page. The first market of each listing has no title, so that
    rejects are written too."""

    def handle(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]
    ) -> SandboxResponse:
        answer = super().handle(method, path, query, headers)
        key = next((v for k, v in headers.items() if k.lower() == "x-api-key"), "")
        echo = f"X-API-Key: {key} is not allowed to GET {path} with headers {dict(headers)}"
        params = dict(query)
        if path == "/trades" and params.get("market_id", "").startswith("KX"):
            body = {"error": {"code": "UPSTREAM_ERROR", "message": f"upstream failed: {echo}", "timestamp": "t"}}
            return SandboxResponse(503, {"content-type": "application/json"}, orjson.dumps(body))
        if path == "/price-history" and not params.get("market_ids", "").startswith("KX"):
            page = f"<html><body><h1>400 Bad Request</h1><pre>{echo}</pre></body></html>"
            return SandboxResponse(400, {"content-type": "text/html"}, page.encode())
        if path == "/markets" and answer.status == 200:  # a record without its title, for the rejects
            body = answer.json()
            body["markets"][0]["title"] = None
            return SandboxResponse(200, answer.headers, orjson.dumps(body))
        return answer


@pytest.mark.slow
def test_the_api_key_appears_in_no_output_log_event_exception_or_file(tmp_path: Path) -> None:
    """A backfill whose failing requests come back with the key in their bodies, run as users run it (the
    command line, a persistent Dagster instance): the key is in none of its output, Python logs (on stderr),
    the instance's event log and storage, the lake (data and rejects), the catalogue cache or the warehouse."""
    home, data_dir = tmp_path / "dagster_home", tmp_path / "data"
    home.mkdir()
    app = EchoingSandbox(SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET,)))
    with LoopbackServer(app) as server:
        env = api_env(server.url, data_dir, DAGSTER_HOME=str(home), PMW_MAX_ATTEMPTS="2")
        code, out, err = run_backfill(env, backfill_args())
    assert code == 1, "both partitions must fail: each has a failing asset"
    assert any(request.key == SECRET for request in app.seen), "the key must have been sent"
    output = out + err
    assert SECRET not in output, "the key leaked into the backfill's output or logs"
    assert output.count(REDACTED) >= 2, f"the echoes must reach the output, redacted:\n{output}"
    assert "retrying" in err, "the retried 503 must be logged"

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert len(runs) == 2
        events = [event for run in runs for event in instance.all_logs(run.run_id)]
    failures = [event for event in events if event.dagster_event is not None and event.dagster_event.is_step_failure]
    assert {f.step_key for f in failures} == {"trades", "price_history"}
    assert all(REDACTED in repr(f) for f in failures), f"the failures must carry the redacted echo: {failures}"
    assert SECRET not in repr(events)

    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {".parquet", ".duckdb"} <= {p.suffix for p in files}
    assert any(p.name == "rejects.parquet" for p in files), "rejects must have been written"
    assert any(p.is_relative_to(home) and p.suffix == ".db" for p in files), "the instance must have storage"
    leaks = [p for p in files if SECRET.encode() in p.read_bytes()]
    assert not leaks, f"the key leaked into {leaks}"


def test_a_secret_never_shows_in_its_repr_or_the_settings() -> None:
    from pipeline.engine.config import Settings

    settings = Settings.from_env({"PMW_SOURCE": "api", "PMW_API_URL": "http://127.0.0.1:1", "PMW_API_KEY": SECRET})
    assert settings.api_key == Secret(SECRET)
    assert SECRET not in repr(settings) + str(settings) + repr(settings.api_key) + f"{settings.api_key}"


# -- identifiers from the API ------------------------------------------------------------------------------

# What a hostile or broken API could send as identifiers: path traversal, SQL, quotes, separators, NULs.
HOSTILE_IDS = (
    "../../../../../../../../tmp/pmw-escaped",
    "x'; DROP VIEW raw.trades; --",
    'q"uo"te\\back;semi/../../slash',
    "nul\x00byte/../..",
)
HOSTILE_SLUG = "../../lake/trades/platform=kalshi/date=2099-01-01/data.parquet'; DELETE FROM x; --\x00"


class RenamingSandbox(WatchedSandbox):
    """The sandbox with some markets' ids replaced by hostile strings, consistently: the listing, trades and
    price history carry the hostile id, and requests for it are answered as for the original market. Every
    market also gets a hostile slug. The pipeline cannot tell this from an API that really sends them."""

    def __init__(self, config: SandboxConfig, renames: dict[str, str]) -> None:
        super().__init__(config)
        self.renames = renames
        self.originals = {hostile: original for original, hostile in renames.items()}

    def handle(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]
    ) -> SandboxResponse:
        asked = [(k, ",".join(self.originals.get(v, v) for v in value.split(","))) for k, value in query]
        answer = super().handle(method, path, asked, headers)
        if answer.status != 200:
            return answer
        return SandboxResponse(answer.status, answer.headers, orjson.dumps(self._rename(orjson.loads(answer.body))))

    def _rename(self, value: Any) -> Any:
        if isinstance(value, dict):
            renamed = {self.renames.get(k, k): self._rename(v) for k, v in value.items()}
            if "slug" in renamed and "outcomes" in renamed:  # a market
                renamed["slug"] = HOSTILE_SLUG
            return renamed
        if isinstance(value, list):
            return [self._rename(v) for v in value]
        return self.renames.get(value, value) if isinstance(value, str) else value


def _live_markets(app: WatchedSandbox, platform: str) -> list[str]:
    """Ids of the platform's markets live on DAY that have trades on it, as the API lists them."""
    listing = app.handle("GET", "/markets", [("platform", platform), ("limit", "250")], {"X-API-Key": SECRET})
    markets = live_records(listing.json()["markets"], DAY)
    app.watch(None)
    return [m["id"] for m in markets]


@pytest.mark.slow
def test_hostile_identifiers_from_the_api_land_as_data_never_as_paths_or_sql(tmp_path: Path) -> None:
    """Market ids and slugs with `../`, quotes, semicolons and NULs flow through the real pipeline (command
    line, Dagster, lake, warehouse) next to an identical run with the ids as the world has them. They land
    as data, exactly the rows of the clean run with only the ids changed; no file appears outside the
    lake's layout; the warehouse's views are intact and find the rows by the hostile ids as values. The
    data dir itself holds a quote and a semicolon, which the warehouse's SQL must quote."""
    config = SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET,))
    clean_app = WatchedSandbox(config)
    chosen = _live_markets(clean_app, "kalshi")[:3] + _live_markets(clean_app, "polymarket")[:1]
    renames = dict(zip(chosen, HOSTILE_IDS, strict=True))
    clean_dir = tmp_path / "clean"
    hostile_dir = tmp_path / "it's; DROP VIEW raw.markets; --" / "data"
    # The two runs side by side: their servers and data dirs are their own.
    with (
        LoopbackServer(clean_app) as clean,
        LoopbackServer(RenamingSandbox(config, renames)) as bad,
        backfill_process(api_env(clean.url, clean_dir), backfill_args()) as clean_run,
        backfill_process(api_env(bad.url, hostile_dir), backfill_args()) as hostile_run,
    ):
        outputs = [clean_run.communicate(timeout=300), hostile_run.communicate(timeout=300)]
    for run, (out, err) in zip((clean_run, hostile_run), outputs, strict=True):
        assert run.returncode == 0, out + err

    assert not assert_lake_consistent(hostile_dir)
    layout = re.compile(
        r"data-budget\.sqlite.*|data/(dagster_home/.+|"  # the runs' Dagster home: the data dir's own
        r"lake/(_rejects/)?(series|events|markets|trades|price_history)/platform=(polymarket|kalshi)/date=2026-11-21/"
        r"(data|rejects)\.parquet|cache/catalogue/[0-9a-f]+\.json(\.lock)?|warehouse\.duckdb(\.wal)?|"
        r"lake/platform_status/platform=(polymarket|kalshi)/date=\d{4}-\d\d-\d\d/round-\d{8}T\d{6}Z\.parquet)"
    )
    hostile_files = [p for p in tmp_path.rglob("*") if p.is_file() and p.is_relative_to(hostile_dir.parent)]
    strays = [p for p in hostile_files if not layout.fullmatch(str(p.relative_to(hostile_dir.parent)))]
    assert not strays, f"files outside the lake's layout: {strays}"
    assert not Path("/tmp/pmw-escaped").exists()

    clean_rows, hostile_rows = lake_rows(clean_dir), lake_rows(hostile_dir)
    assert hostile_rows.keys() == clean_rows.keys() and len(clean_rows) == 10
    restore = dict(zip(HOSTILE_IDS, chosen, strict=True))
    for key, frame in hostile_rows.items():
        table = key[0]
        ids = {"markets": ["id", "platform_id"], "trades": ["market_id"], "price_history": ["market_id"]}
        back = frame.with_columns(pl.col(ids.get(table, [])).replace(restore))
        if table == "markets":
            assert (back["slug"] == HOSTILE_SLUG).all()
            back = back.drop("slug")
        expected = clean_rows[key].drop("slug") if table == "markets" else clean_rows[key]
        order = list(TABLES[table].sort_key)
        assert back.sort(order).equals(expected.sort(order)), f"{key} differs beyond the ids"

    with connect_read_only(hostile_dir / "warehouse.duckdb") as connection:
        views = connection.execute(
            "SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal ORDER BY ALL"
        ).fetchall()
        assert views == sorted(("raw", table) for table in lake_tables())
        for original, hostile in renames.items():
            found = connection.execute("SELECT count(*) FROM raw.markets WHERE id = ?", [hostile]).fetchone()
            assert found == (1,), f"market {hostile!r} must be found by its id"
            trades = connection.execute("SELECT count(*) FROM raw.trades WHERE market_id = ?", [hostile]).fetchone()
            platform = "polymarket" if original.isdigit() else "kalshi"
            expected_trades = int((clean_rows[("trades", platform, DAY)]["market_id"] == original).sum())
            assert trades == (expected_trades,) and expected_trades > 0


@pytest.mark.parametrize("hostile", [*HOSTILE_IDS, HOSTILE_SLUG, "kalshi/../../..", "trades/../../..", ".."])
def test_identifiers_cannot_name_a_lake_path(tmp_path: Path, hostile: str) -> None:
    """An identifier from the API used as a table or platform is refused before any path is built from it,
    and nothing is created, inside the lake or out."""
    lake = Lake(tmp_path / "lake")
    rows = pl.DataFrame(schema=TABLES["trades"].polars_schema)
    for table, platform in ((hostile, "kalshi"), ("trades", hostile)):
        frame = rows.with_columns(pl.lit(platform).alias("platform")) if platform == hostile else rows
        with pytest.raises(ValueError, match=r"unknown (table|platform)"):
            lake.write_partition(table, platform, DAY, frame)
        with pytest.raises(ValueError, match=r"unknown (table|platform)"):
            lake.partition_path(table, platform, DAY)
    assert list(tmp_path.rglob("*")) == [], "a refused write must create nothing"


def test_a_partition_directory_symlinked_out_of_the_lake_is_refused(tmp_path: Path) -> None:
    """Identifiers that pass validation still cannot lead a write out of the root through a symlink."""
    lake = Lake(tmp_path / "lake")
    outside = tmp_path / "outside"
    outside.mkdir()
    (lake.root / "trades").mkdir(parents=True)
    (lake.root / "trades" / "platform=kalshi").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="outside the lake root"):
        lake.write_partition("trades", "kalshi", DAY, pl.DataFrame(schema=TABLES["trades"].polars_schema))
    assert list(outside.rglob("*")) == []


# -- the sandbox's address ---------------------------------------------------------------------------------


def test_the_sandbox_listens_on_loopback_unless_told_otherwise() -> None:
    assert build_parser().parse_args(["sandbox"]).host == "127.0.0.1"
    with SandboxServer(WatchedSandbox(SandboxConfig(world=SMALL_WORLD)), port=0) as server:
        assert server.httpd.server_address[0] == "127.0.0.1"
        assert server.url.startswith("http://127.0.0.1:")
    assert build_parser().parse_args(["sandbox", "--host", "0.0.0.0"]).host == "0.0.0.0"


# -- TLS ---------------------------------------------------------------------------------------------------


@contextmanager
def _tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a fresh self-signed certificate: (its URL, the certificate)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"status": "ok"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            """A client refusing the certificate is the point of the test: report only other errors."""
            if not isinstance(sys.exc_info()[1], ssl.SSLError):
                super().handle_error(request, client_address)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = Server(("127.0.0.1", 0), Health)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", cert
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_tls_certificates_are_verified(tmp_path: Path) -> None:
    """The HTTP layer refuses a server whose certificate no trusted authority signed; the same server is
    fine for a client told to trust that certificate, so the refusal is the verification, not the server."""
    with _tls_server(tmp_path) as (url, cert):
        with httpx.Client(verify=ssl.create_default_context(cafile=str(cert))) as trusting:
            assert trusting.get(f"{url}/health").json() == {"status": "ok"}
        layer = HttpLayer(url, api_key=Secret(SECRET), max_attempts=1)
        with layer, pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED"):
            layer.get_json("/health")
