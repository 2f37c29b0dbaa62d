"""Run a command from this small process and write what it cost (wall, its own CPU time, peak RSS, exit code).

Run as a script (``python benchmarks/launcher.py USAGE.json COMMAND...``), so that it imports nothing of ours. A
process's peak resident set (ru_maxrss) starts at its parent's resident set when it is forked, and execve keeps it:
a command started straight from a benchmark runner that has grown (a sandbox world, a 20-million-row lake) reports
the runner's size as its own. Started from here, it reports its own.
"""

import json
import os
import subprocess
import sys
import time


def main() -> None:
    usage_path, *command = sys.argv[1:]
    started = time.perf_counter()
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    with open(usage_path, "w") as file:
        json.dump({"seconds": time.perf_counter() - started, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                   "peak_rss_kb": usage.ru_maxrss, "exit": os.waitstatus_to_exitcode(status)}, file)
    sys.exit(0)


if __name__ == "__main__":
    main()
