"""`pmw query`: its arguments, and the run that prints or writes the statement's result."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pipeline.cli.common.arguments import Subparsers, positive
from pipeline.cli.common.settings import configured
from pipeline.cli.query.warehouse import DEFAULT_MAX_ROWS, FORMATS, run_query


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "query",
        help="run one SQL statement on the warehouse, read-only, and print or write its result",
        description="Run one SQL statement on PMW_DATA_DIR's warehouse.duckdb, opened read-only (a pipeline "
                    "running meanwhile is not disturbed), and print its result as a table, or write it as "
                    "csv, json (an array of objects) or parquet. Times are shown in UTC.",
        epilog="exit status: 0 the statement ran; 1 it failed, or the warehouse is missing or held read-write "
               "by another process (one line on stderr says which); 2 bad arguments (also: not exactly one "
               "statement, parquet without -o, an output file in the lake).",
    )
    parser.add_argument("sql", help='the statement, e.g. "SELECT platform, count(*) FROM raw.trades GROUP BY ALL"')
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default: an aligned table of the first --max-rows rows), csv, json or parquet")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="write the whole result to this file (csv, json, parquet; parquet needs it) instead of "
                             "standard output")
    parser.add_argument("--max-rows", type=positive, default=DEFAULT_MAX_ROWS,
                        help=f"rows a table shows, and then says how many there are (default {DEFAULT_MAX_ROWS})")


def run(args: argparse.Namespace) -> int:
    settings = configured(credentials=False)
    try:
        written = run_query(settings.warehouse_path, args.sql, args.format, args.output, args.max_rows)
        if written is not None:
            print(f"pmw query: {written} rows -> {args.output}")
    except BrokenPipeError:  # the reader had enough (`| head`): no traceback, nor one when stdout is flushed at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
