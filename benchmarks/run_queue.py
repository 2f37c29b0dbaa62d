"""Dagster's run queue in one process, for the `snapshots` benchmark: the daemon's own dequeuer over an instance
configured by the repo's pipeline/defs/dagster.yaml, with each launched run executed in a thread instead of a process.

What decides the order of the runs is Dagster's, unchanged: `QueuedRunCoordinator` queues every submitted run,
and `QueuedRunCoordinatorDaemon.run_iteration` (what `dagster-daemon run` calls every `dequeue_interval_seconds`)
launches the queued runs highest `dagster/priority` first, holding back a run while a pool it uses is full at
dagster.yaml's limits (`concurrency.pools`: one run at a time in `unified_api`). Only the launcher differs:
`ThreadRunLauncher` executes the run in the benchmark's process, as `dagster api execute_run` would in a process
of its own, so that the scaled-down figures measure the queue and the runs' requests rather than a Python start
per run (a fixed cost which does not shrink with the benchmark's rate window).

Runs are created from the schedules' own `RunRequest`s as Dagster's scheduler creates them: the job's remote
origin (for the queue) and code origin (for the launcher), the request's tags resolved with its partition's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from dagster._config.config_schema import UserConfigSchema
from dagster._core.execution.api import execute_run
from dagster._core.launcher import LaunchRunContext, RunLauncher
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._serdes import ConfigurableClass
from dagster._serdes.config_class import ConfigurableClassData
from dagster._utils.hosted_user_process import recon_job_from_origin

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFINITIONS_MODULE = "pipeline.definitions"


class ThreadRunLauncher(RunLauncher, ConfigurableClass):
    """Launches a run in a thread of this process: `execute_run`, as a run worker process calls it."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        self._inst_data = inst_data
        self._threads: list[threading.Thread] = []
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> UserConfigSchema:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> ThreadRunLauncher:
        return cls(inst_data=inst_data)

    def launch_run(self, context: LaunchRunContext) -> None:
        job = recon_job_from_origin(context.job_code_origin)  # type: ignore[arg-type]
        thread = threading.Thread(target=execute_run, args=(job, context.dagster_run, self._instance),
                                  name=f"run-{context.dagster_run.run_id[:8]}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def terminate(self, run_id: str) -> bool:
        raise NotImplementedError("the benchmark's runs are not terminated")

    def join(self, timeout: float = 60.0) -> None:
        """Wait for the runs' threads (Dagster's test instance calls this on exit)."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def instance_config(dequeue_interval_s: float) -> dict[str, Any]:
    """The repo's dagster.yaml (its pools above all), with the queued coordinator and the in-process launcher."""
    config = yaml.safe_load((REPO_ROOT / "pipeline" / "defs" / "dagster.yaml").read_text())
    config.pop("run_monitoring", None)  # its daemon does not run here, and no run dies
    return {
        **config,
        # A run worker process captures its own stdout and stderr; runs in threads of one process cannot each
        # capture the process's, and the capture's clean-up then stalls a run for a minute.
        "compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"},
        "run_coordinator": {"module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator",
                            "config": {"dequeue_interval_seconds": max(1, round(dequeue_interval_s))}},
        "run_launcher": {"module": __name__, "class": ThreadRunLauncher.__name__},
    }


class RunQueue:
    """Submit the schedules' run requests to the queue; a thread dequeues every `dequeue_interval_s`."""

    def __init__(self, instance: dg.DagsterInstance, workspace: WorkspaceProcessContext,
                 dequeue_interval_s: float) -> None:
        from pipeline.definitions import defs

        self.instance, self.workspace, self.interval_s = instance, workspace, dequeue_interval_s
        self._defs = defs
        self._stop = threading.Event()
        self._dequeuer = threading.Thread(target=self._dequeue_loop, name="dequeuer", daemon=True)

    def submit(self, job_name: str, request: dg.RunRequest) -> str:
        """Create the run of `request` as the scheduler does and put it in the queue; its run id."""
        job_def = self._defs.get_job_def(job_name)
        request = request.with_resolved_tags_and_config(target_definition=job_def, dynamic_partitions_requests=[],
                                                        dynamic_partitions_store=self.instance)
        context = self.workspace.create_request_context()
        location = next(iter(context.get_code_location_entries().values())).code_location
        assert location is not None, "the code location did not load"
        repository = next(iter(location.get_repositories().values()))
        remote_job = repository.get_full_job(job_name)
        run = self.instance.create_run_for_job(
            job_def=job_def,
            run_config=request.run_config,
            status=dg.DagsterRunStatus.NOT_STARTED,
            tags={**remote_job.run_tags, **request.tags},
            remote_job_origin=remote_job.get_remote_origin(),
            job_code_origin=remote_job.get_python_origin(),
        )
        self.instance.submit_run(run.run_id, context)
        return run.run_id

    def start(self) -> None:
        self._dequeuer.start()

    def _dequeue_loop(self) -> None:
        daemon = QueuedRunCoordinatorDaemon(interval_seconds=self.interval_s)
        while not self._stop.is_set():
            for _ in daemon.run_iteration(self.workspace):
                pass
            self._stop.wait(self.interval_s)

    def wait_until(self, run_ids: list[str], statuses: set[dg.DagsterRunStatus], timeout_s: float) -> None:
        """Wait until every run of `run_ids` is in one of `statuses`; fails on a failed run or the timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            runs = [self.instance.get_run_by_id(run_id) for run_id in run_ids]
            failed = [r.run_id for r in runs if r and r.status == dg.DagsterRunStatus.FAILURE]
            if failed:
                raise RuntimeError(f"runs failed: {failed}")
            if all(r and r.status in statuses for r in runs):
                return
            time.sleep(0.1)
        raise TimeoutError(f"runs {run_ids} not {sorted(s.value for s in statuses)} within {timeout_s} s")

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        self._dequeuer.join(timeout_s)
        launcher = self.instance.run_launcher
        assert isinstance(launcher, ThreadRunLauncher)
        launcher.join(timeout=timeout_s)


@contextmanager
def run_queue(dequeue_interval_s: float) -> Iterator[RunQueue]:
    """A throwaway instance configured as the repo's, the code location loaded in this process, the dequeuer
    running; stopped (dequeuer, then the runs' threads) on exit."""
    origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name=DEFINITIONS_MODULE,
                                                              working_directory=str(REPO_ROOT)))
    with dg.instance_for_test(overrides=instance_config(dequeue_interval_s)) as instance, \
            create_test_daemon_workspace_context(InProcessWorkspaceLoadTarget(origin), instance) as workspace:
        queue = RunQueue(instance, workspace, dequeue_interval_s)
        queue.start()
        try:
            yield queue
        finally:
            queue.stop()
