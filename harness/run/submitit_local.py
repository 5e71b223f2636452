"""submitit's local executor (``--executor submitit`` where there is no Slurm) with a job controller that stops when
the driver that started it is gone.

submitit starts one controller process per job, meant to outlive the Python session that submitted it; killed with
SIGKILL, the driver cannot cancel its jobs, and its controllers went on running them, and started them again on a
requeue, for a driver that would never record their rows. The controller here is submitit's, with two changes: it
watches its parent (``os.getppid()`` is no longer the driver once the driver died and the controller was
reparented) while its job runs, ending the job when the driver is gone, and it never starts (or restarts) a job for
a driver that is gone. Run as ``python -m harness.run.submitit_local FOLDER`` with submitit's environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import typing as tp
from pathlib import Path

from submitit.local.local import LOCAL_REQUEUE_RETURN_CODE, Controller, LocalExecutor, LocalJob, LocalJobEnvironment

DRIVER_ENV = "SOTER_BENCH_SUBMITIT_DRIVER"  # the pid of the process that submitted the job


def driver_gone(driver: int) -> bool:
    """Whether the driver that started this controller died: a process whose parent dies is reparented (to init
    or a subreaper), so its parent pid is no longer the driver's, however the driver died."""
    return os.getppid() != driver


class WatchedController(Controller):
    """submitit's controller, ending its job and starting no other once ``driver`` is gone."""

    def __init__(self, folder: Path, driver: int) -> None:
        super().__init__(folder)
        self.driver = driver

    def wait(self, freq: int = 24) -> tp.Sequence[tp.Optional[int]]:
        """As submitit's: the tasks' exit codes once they end or time out (the timeout signal sent on time); also
        returns, with tasks still running, once the driver is gone (``run`` then kills them)."""
        timeout = freq * self.timeout_s
        almost_timeout = freq * (self.timeout_s - self.signal_delay_s)
        for step in range(timeout):
            exit_codes = [t.poll() for t in self.tasks]
            if all(e is not None for e in exit_codes) or driver_gone(self.driver):
                return exit_codes
            if step == almost_timeout:
                self._forward_signal(LocalJobEnvironment._usr_sig())
            time.sleep(1.0 / freq)
        return [t.poll() for t in self.tasks]

    def run(self, max_retry: int = 6) -> None:
        for _ in range(max_retry):
            if driver_gone(self.driver):
                return  # no job for a driver that will never record its row
            try:
                self.start_tasks()
                exit_codes = self.wait()
                if not any(e == LOCAL_REQUEUE_RETURN_CODE for e in exit_codes):
                    break
            finally:
                self.kill_tasks()


def start_controller(folder: Path, command: str, tasks_per_node: int = 1, cuda_devices: str = "",
                     timeout_min: float = 5.0, signal_delay_s: int = 30,
                     stderr_to_stdout: bool = False) -> subprocess.Popen:
    """submitit's ``start_controller`` (its environment, no ``setup`` shell), starting :class:`WatchedController`."""
    env = dict(os.environ)
    env.update(
        SUBMITIT_LOCAL_NTASKS=str(tasks_per_node), SUBMITIT_LOCAL_COMMAND=command,
        SUBMITIT_LOCAL_TIMEOUT_S=str(int(60 * timeout_min)), SUBMITIT_LOCAL_SIGNAL_DELAY_S=str(int(signal_delay_s)),
        SUBMITIT_LOCAL_NODEID="0", SUBMITIT_LOCAL_JOB_NUM_NODES="1",
        SUBMITIT_STDERR_TO_STDOUT="1" if stderr_to_stdout else "", SUBMITIT_EXECUTOR="local",
        CUDA_VISIBLE_DEVICES=cuda_devices, SUBMITIT_LOCAL_WITH_SHELL="", **{DRIVER_ENV: str(os.getpid())},
    )
    return subprocess.Popen([sys.executable, "-m", __name__, str(folder)], env=env)


class WatchedLocalExecutor(LocalExecutor):
    """submitit's local executor whose jobs' controllers stop with the driver (:class:`WatchedController`)."""

    def _submit_command(self, command: str) -> LocalJob:
        if self.parameters.get("setup"):
            raise ValueError("the local executor of --executor submitit takes no 'setup' commands; set up the "
                             "environment before the run")
        ntasks = self.parameters.get("tasks_per_node", 1)
        n_gpus = self.parameters.get("gpus_per_node", 0)
        visible_gpus = self.parameters.get("visible_gpus", ())
        gpus = range(n_gpus) if visible_gpus == () else visible_gpus[:n_gpus]
        process = start_controller(
            self.folder, command, tasks_per_node=ntasks, cuda_devices=",".join(str(k) for k in gpus),
            timeout_min=self.parameters.get("timeout_min", 2.0),
            signal_delay_s=self.parameters.get("signal_delay_s", 30),
            stderr_to_stdout=self.parameters.get("stderr_to_stdout", False),
        )
        return LocalJob(folder=self.folder, job_id=str(process.pid), process=process, tasks=list(range(ntasks)))


def _main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit(f"usage: python -m {__name__} FOLDER (started by the local executor of --executor submitit)")
    WatchedController(Path(argv[0]), int(os.environ[DRIVER_ENV])).run()


if __name__ == "__main__":
    _main(sys.argv[1:])
