"""`pmw`: the command line. main.py lists the commands; each is a module (or a subpackage's command.py) with
`add_parser(subparsers)` and `run(args) -> int`; common/ holds what several commands share."""
