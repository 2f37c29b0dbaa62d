"""Children that meet file permissions even when the tests run as root (as in containers)."""

from __future__ import annotations

import os
import sys

# Run as `python -c DROP_THEN_EXEC program args...`: drops, from the bounding set, the capabilities that let root
# read past file permissions (CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2), then executes the program, which
# starts without them.
_DROP_THEN_EXEC = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for capability in (1, 2):
    if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
        raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {capability})")
os.execv(sys.argv[1], sys.argv[1:])
"""


def bound_by_permissions(command: list[str]) -> list[str]:
    """`command` made to meet file permissions: as root, run without the capabilities that override them, so
    that a directory of mode 000 is as closed to it as to any user; as anyone else, `command` itself."""
    return [sys.executable, "-c", _DROP_THEN_EXEC, *command] if os.geteuid() == 0 else command
