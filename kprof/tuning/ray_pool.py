"""``RayPool``: screening spread over a Ray cluster, one actor per GPU (optional: ``kprof[ray]``).

Each actor holds a :class:`CandidateWorker`, so a crashing candidate still kills only a child
process of its actor and the actor lives on; Ray pins the actor to its GPU through
``CUDA_VISIBLE_DEVICES``, which the child inherits. Every actor reports its GPU model when it
starts, and a cluster of mixed models is refused, so GPUs of different models never share a
cache entry. The driver alone writes the cache, atomically, as in the local pool; the finalists'
paired confirmation runs on the first actor alone.
"""

from __future__ import annotations

from typing import Callable, Iterable

from kprof.core.errors import KprofError
from kprof.tuning.cache import CandidateRecord
from kprof.tuning.pool import check_models
from kprof.tuning.worker import CandidateWorker, WorkerSpec


class _Actor:
    """The body of one Ray actor: a candidate worker on the actor's GPU."""

    def __init__(self, spec: WorkerSpec, timeout_s: float):
        self.worker = CandidateWorker(spec, timeout_s)

    def device_name(self) -> str:
        self.worker.start()
        return self.worker.device_name

    def measure(self, config: dict, rounds: int | None) -> CandidateRecord:
        return self.worker.measure(config, rounds)

    def paired(self, config: dict, protocol: dict):
        return self.worker.paired(config, protocol)

    def close(self) -> None:
        self.worker.close()


class _Confirmer:
    """The first actor seen as a :class:`CandidateWorker` (what the finalists' confirmation calls)."""

    def __init__(self, ray, actor):
        self._ray, self._actor = ray, actor

    def measure(self, config: dict, rounds: int | None = None) -> CandidateRecord:
        return self._ray.get(self._actor.measure.remote(config, rounds))

    def paired(self, config: dict, protocol: dict):
        return self._ray.get(self._actor.paired.remote(config, protocol))


def import_ray():
    try:
        import ray
    except ImportError:
        raise KprofError("--backend ray needs Ray: pip install 'kprof[ray]'") from None
    return ray


class RayPool:
    def __init__(self, spec: WorkerSpec, timeout_s: float, address: str | None = None, workers: int | None = None):
        """One actor per GPU of the cluster at ``address`` (None: a local Ray instance). On a
        cluster without GPUs, ``workers`` interpreter actors (the CPU tests)."""
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        self._ray = ray
        gpus = int(ray.cluster_resources().get("GPU", 0))
        count = gpus or max(1, workers or 1)
        actor = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1)(_Actor)
        self.actors = [actor.remote(spec, timeout_s) for _ in range(count)]
        self.devices = tuple(f"ray actor {i}" for i in range(count))
        self.workers = self.actors  # len() of the pool, as for the local one
        self.confirmer = _Confirmer(ray, self.actors[0])

    def start(self, expected_device: str | None = None) -> None:
        check_models(set(self._ray.get([a.device_name.remote() for a in self.actors])), expected_device,
                     "the Ray cluster")

    def measure(self, configs: Iterable[dict], on_result: Callable[[CandidateRecord], None],
                more: Callable[[], bool] = lambda: True, rounds: int | None = None) -> None:
        """As :meth:`WorkerPool.measure`: free actors take the next config while ``more()``;
        ``on_result`` runs here, in the driver, for each record in completion order."""
        todo = iter(configs)
        running: dict = {}  # object ref -> actor
        idle = list(self.actors)
        failure = None
        while True:
            while idle and failure is None and more():
                cfg = next(todo, None)
                if cfg is None:
                    break
                actor = idle.pop()
                running[actor.measure.remote(cfg, rounds)] = actor
            if not running:
                break
            ready, _ = self._ray.wait(list(running), num_returns=1)
            idle.append(running.pop(ready[0]))
            try:
                record = self._ray.get(ready[0])
                if failure is None:
                    on_result(record)
            except BaseException as exc:  # noqa: BLE001 - re-raised once nothing is running
                failure = failure or exc
        if failure is not None:
            raise failure

    def close(self) -> None:
        try:
            self._ray.get([a.close.remote() for a in self.actors], timeout=30)
        finally:
            for a in self.actors:
                self._ray.kill(a)
