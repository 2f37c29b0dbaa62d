"""`pmw shell`: a read-only SQL prompt on the warehouse, for analysts without the duckdb command.

A statement may span lines and ends with ``;``. Each statement opens the warehouse read-only for as long as it
runs, as `pmw query` does, so an idle prompt never keeps a pipeline from updating its views. On a terminal
the prompt has readline's editing and a history file; from a pipe it reads statements without prompting.
Ctrl-D (or ``.quit``) ends it; Ctrl-C drops the statement being typed, or stops the one running.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import TextIO

from pipeline.cli.common.arguments import Subparsers, positive
from pipeline.cli.common.settings import configured
from pipeline.cli.query.warehouse import (
    DEFAULT_MAX_ROWS,
    QueryError,
    open_warehouse,
    print_table,
    relation,
    require_warehouse,
    split_statements,
)

HISTORY_FILE = Path.home() / ".pmw_history"
HISTORY_LENGTH = 1000
PROMPT, CONTINUATION = "pmw> ", " ...> "
TABLES_SQL = """
SELECT schema_name || '.' || table_name AS name, 'table' AS kind FROM duckdb_tables() WHERE NOT internal
UNION ALL
SELECT schema_name || '.' || view_name, 'view' FROM duckdb_views() WHERE NOT internal
ORDER BY name
"""
HELP = """Statements end with ';' and may span lines; each runs read-only on the warehouse.
  .tables   the tables and views (raw, staging, marts)
  .help     this text
  .quit     leave (or Ctrl-D)"""


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "shell",
        help="an interactive read-only SQL prompt on the warehouse, with history",
        description="A SQL prompt on PMW_DATA_DIR's warehouse.duckdb, each statement run read-only. Statements "
                    "end with ';' and may span lines; .tables lists the tables and views, .help the commands; "
                    "Ctrl-D leaves. On a terminal, lines are edited with readline and kept in ~/.pmw_history; "
                    "statements can also be piped in.",
        epilog="exit status: 0 the input ended (a failed statement is said on stderr and the prompt goes on); "
               "1 the warehouse is missing, or a statement piped in failed (the rest still ran); 2 bad arguments.",
    )
    parser.add_argument("--max-rows", type=positive, default=DEFAULT_MAX_ROWS,
                        help=f"rows each result shows (default {DEFAULT_MAX_ROWS})")


def run(args: argparse.Namespace) -> int:
    return run_shell(configured(credentials=False).warehouse_path, max_rows=args.max_rows)


def statements(read: Callable[[str], str | None]) -> Iterator[str]:
    """Whole statements (and dot commands) from `read(prompt)`, which returns a line, or None at the end.

    A line of only ``\\x03`` (Ctrl-C) drops the statement being typed.
    """
    pending: list[str] = []
    while (line := read(CONTINUATION if pending else PROMPT)) is not None:
        if line == "\x03":
            pending.clear()
        elif not pending and line.strip().startswith("."):
            yield line.strip()
        elif line.strip() or pending:
            pending.append(line)
            if line.rstrip().endswith(";"):
                yield "\n".join(pending)
                pending.clear()
    if "".join(pending).strip():
        yield "\n".join(pending)


def stream_reader(stream: TextIO) -> Callable[[str], str | None]:
    """`read(prompt)` over a stream that is not a terminal: no prompt, None at its end."""

    def read(_prompt: str) -> str | None:
        line = stream.readline()
        return line.rstrip("\n") if line else None

    return read


def terminal_reader(history: Path) -> Callable[[str], str | None]:
    """`read(prompt)` at a terminal: readline's editing and the history file (a convenience: one that cannot be
    read or written is left aside), None at Ctrl-D."""
    import readline

    with suppress(OSError):
        readline.read_history_file(history)
    readline.set_history_length(HISTORY_LENGTH)

    def read(prompt: str) -> str | None:
        try:
            return input(prompt)
        except KeyboardInterrupt:
            print()
            return "\x03"
        except EOFError:
            print()
            return None
        finally:
            with suppress(OSError):
                readline.write_history_file(history)

    return read


def run_statement(path: Path, statement: str, max_rows: int, out: TextIO) -> None:
    """A dot command, or what was typed up to a ';' (statements typed on one line run in turn); QueryError says
    why one could not run."""
    if statement == ".help":
        print(HELP, file=out)
        return
    if statement.startswith(".") and statement != ".tables":
        raise QueryError(f"unknown command {statement.split()[0]}; .help lists them")
    with open_warehouse(path) as connection:
        for sql in [TABLES_SQL] if statement == ".tables" else split_statements(statement):
            print_table(relation(connection, sql), max_rows, out)


def run_shell(path: Path, stdin: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None,
              history: Path = HISTORY_FILE, max_rows: int = DEFAULT_MAX_ROWS) -> int:
    """The prompt until its input ends, then 0; 1 when the input was piped in (not a terminal) and a statement of
    it failed. A failed statement is said on `err` and the prompt goes on; QueryError when there is no warehouse
    to query."""
    stdin, out, err = stdin or sys.stdin, out or sys.stdout, err or sys.stderr
    require_warehouse(path)
    interactive = stdin.isatty()
    if interactive:
        print(f"pmw shell: {path}, read-only; statements end with ';', .help for help, Ctrl-D to leave", file=out)
    read = terminal_reader(history) if interactive else stream_reader(stdin)
    failed = False
    for statement in statements(read):
        if statement in (".quit", ".exit"):
            break
        try:
            run_statement(path, statement, max_rows, out)
        except QueryError as error:
            print(f"Error: {error}", file=err)
            failed = True
        except KeyboardInterrupt:
            print("Interrupted", file=err)
            failed = True
    return 1 if failed and not interactive else 0
