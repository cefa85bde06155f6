"""Ray itself: the lazy import, joining or starting a cluster, and what each actor asks for.

Ray is imported here only, inside functions, so that ``import hrefine.distributed`` stays
light; without the ``distributed`` extra the first call raises
:class:`~hrefine.errors.MissingDependencyError` naming it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hrefine._optional import require
from hrefine.errors import ConfigError

__all__ = [
    "IO_CPUS",
    "OFFLINE_ENV",
    "SPLIT_CPUS",
    "ActorPlan",
    "connect",
    "offline_runtime_env",
    "plan_actors",
    "ray",
    "tally",
]

#: CPUs reserved by each read, prepare and write task. The actors leave these (and
#: :data:`SPLIT_CPUS`) free, so that reads and writes always find room beside a full pool
#: (otherwise the pool holds every CPU, no read is scheduled and the run waits forever).
IO_CPUS = 0.25
#: CPUs of Ray Data's block-splitting task (``repartition``), which asks for one whole CPU.
SPLIT_CPUS = 1.0

#: Environment every Ray worker runs with: models load from disk only, and the tokenizers'
#: own thread pool stays off (Ray forks workers; each actor is one process already).
OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def ray() -> ModuleType:
    """The ``ray`` module, imported on first use (extra ``distributed``)."""
    require("ray.data", "distributed")
    return require("ray", "distributed")


def offline_runtime_env() -> dict[str, Any]:
    """The ``runtime_env`` that keeps Ray workers off the network (pass it to your own
    ``ray.init`` when you start Ray yourself)."""
    return {"env_vars": dict(OFFLINE_ENV)}


def connect(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Join a Ray cluster, or start a local one, unless this process is connected already.

    Parameters
    ----------
    address:
        ``"auto"`` (the cluster ``ray start`` made on this machine), ``"ray://host:10001"``
        (a remote cluster through Ray Client, e.g. a KubeRay head service), or None: a local
        instance started for this process (or the cluster ``RAY_ADDRESS`` names).
    num_cpus:
        CPUs of a local instance (default: all of them); ignored when joining a cluster.

    Raises
    ------
    MissingDependencyError
        Ray is not installed (extra ``distributed``).
    ConfigError
        No cluster could be reached at ``address``.
    """
    rt = ray()
    if rt.is_initialized():
        return
    settings: dict[str, Any] = {
        "runtime_env": offline_runtime_env(),
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    if address is None:
        settings["num_cpus"] = num_cpus
    else:
        settings["address"] = address
    try:
        rt.init(**settings)
    except ConnectionError as exc:
        msg = (
            f"could not reach a Ray cluster at {address!r}: {exc}; start one with `ray start "
            "--head`, give its address (ray://host:10001), or leave --address out to run locally"
        )
        raise ConfigError(msg) from exc


class _Counter:
    """A sum the tasks of one run add to (the body of :func:`tally`'s actor).

    Each count comes with the key of what was counted (a block's ids, a group's name): a task
    Ray runs again after a failure reports the same key, and is counted once.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, key: str, count: int) -> None:
        self.counts[key] = count

    def read(self) -> int:
        return sum(self.counts.values())


def tally() -> Any:
    """A counter actor that asks for no CPU: a run's tasks add to it with
    ``ray.get(counter.add.remote(key, n))`` and the driver reads ``counter.read.remote()`` at the
    end (Ray Data gives a task no other way to report a number back)."""
    return ray().remote(num_cpus=0)(_Counter).remote()


@dataclass(frozen=True)
class ActorPlan:
    """What a stage's actor pool asks Ray for."""

    workers: int
    """Actors in the pool (one model load each)."""
    num_cpus: float
    """CPUs reserved per actor."""
    num_gpus: float
    """GPUs reserved per actor (0 on a CPU-only cluster, or for a stage without a model)."""
    split_blocks: bool = True
    """Cut the input into blocks of a batch each, so that every actor gets work (not on a
    cluster too small to run Ray's splitting task beside the pool).
    """

    def remote_args(self) -> dict[str, Any]:
        """Keyword arguments of ``map_batches``/``map_groups`` for this pool."""
        strategy = ray().data.ActorPoolStrategy(size=self.workers)
        args: dict[str, Any] = {"compute": strategy, "num_cpus": self.num_cpus}
        if self.num_gpus:
            args["num_gpus"] = self.num_gpus
        return args


def plan_actors(
    workers: int | None,
    *,
    uses_model: bool,
    gpus_per_worker: float = 1.0,
    resources: dict[str, float] | None = None,
) -> ActorPlan:
    """Size an actor pool from the cluster's resources.

    Parameters
    ----------
    workers:
        Actors wanted; None: one per GPU (a model stage on a cluster with GPUs), else one per
        CPU but two (1.5 CPUs stay free for the reads, the block splitting and the writes).
    uses_model:
        The stage runs a scorer or an LM; only such a stage asks for GPUs.
    gpus_per_worker:
        GPUs per actor when the cluster has GPUs (a fraction packs several actors on a GPU).
    resources:
        The cluster's resources (default: ``ray.cluster_resources()``).

    Returns
    -------
    ActorPlan
        GPU actors (one CPU each) when the stage uses a model and the cluster has GPUs, CPU
        actors otherwise.
    """
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        msg = f"workers must be at least 1, got {workers!r}"
        raise ConfigError(msg)
    if not gpus_per_worker > 0:
        msg = f"gpus_per_worker must be above 0, got {gpus_per_worker!r}"
        raise ConfigError(msg)
    have = ray().cluster_resources() if resources is None else resources
    gpus = float(have.get("GPU", 0.0))
    cpus = float(have.get("CPU", os.cpu_count() or 1))
    # CPUs the actors may hold together: the rest is for the read, prepare and write tasks and
    # for the task that cuts blocks to the batch size (Ray gives it one whole CPU).
    split = cpus >= SPLIT_CPUS + 3 * IO_CPUS
    room = max(cpus - 2 * IO_CPUS - (SPLIT_CPUS if split else 0.0), IO_CPUS)
    if uses_model and gpus >= gpus_per_worker:
        n = workers or max(1, math.floor(gpus / gpus_per_worker))
        return ActorPlan(n, min(1.0, room / n), gpus_per_worker, split)
    n = workers or max(1, math.floor(room))
    return ActorPlan(n, min(1.0, room / n), 0.0, split)
