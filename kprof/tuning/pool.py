"""``WorkerPool``: screening fanned out over the GPUs of one host, one worker process per GPU.

Each worker is a :class:`CandidateWorker` pinned to one GPU through ``CUDA_VISIBLE_DEVICES``
(set before its process imports torch), so it has its own CUDA context, eviction buffer and host
gate, and a crash or hang restarts that worker alone. Candidates go to whichever worker is free;
results come back to the caller's thread, which alone writes the cache. Paired confirmation of
finalists is not spread: rounds interleaved on two devices are not a paired design, so
:attr:`confirmer` (the first device) runs all of it. GPUs of different models would give
screening times that do not compare, so a pool of mixed models is refused. GPUs of one model
still differ a little (clocks, heat), and a config's screening rounds come from whichever GPU
was free: that can reorder near-equal candidates, but not the decision, which the paired
confirmation on one GPU makes.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Callable, Iterable, Sequence

from kprof.core.device_pinning import physical_device
from kprof.core.errors import KprofError
from kprof.tuning.cache import CandidateRecord
from kprof.tuning.worker import CandidateWorker, WorkerSpec


def check_models(names: set[str], expected: str | None, where: str) -> None:
    """Refuse workers on GPUs of several models, or of another model than the cache's key."""
    if len(names) > 1:
        raise KprofError(f"{where} mixes GPU models ({', '.join(sorted(names))}): their times do not compare and "
                         "they never share a tuning cache; use GPUs of one model")
    if expected is not None and names != {expected}:
        raise KprofError(f"{where} runs on {', '.join(sorted(names))} but this cache is keyed by {expected} (this "
                         "process's GPU): use GPUs of that model")


class WorkerPool:
    def __init__(self, spec: WorkerSpec, devices: Sequence[str], timeout_s: float, pin: bool = True):
        """``devices``: one worker per entry (visible GPU indices), pinned to that GPU when ``pin``
        (interpreter workers are not pinned); no entries: one unpinned worker, the single-device tune."""
        self.pinned = pin and bool(devices)
        specs = [dataclasses.replace(spec, visible_device=physical_device(d) if pin else None) for d in devices]
        self.devices = tuple(devices) or ("default",)
        self.workers = [CandidateWorker(s, timeout_s) for s in specs or [spec]]

    @property
    def confirmer(self) -> CandidateWorker:
        return self.workers[0]

    def start(self, expected_device: str | None = None) -> None:
        """Start every worker (in parallel) and check what each reports: one GPU model, the model
        the cache is keyed by (``expected_device``), and distinct GPUs when pinned."""
        errors: list[BaseException] = []

        def start(w):
            try:
                w.start()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        check_models({w.device_name for w in self.workers}, expected_device, f"--devices {','.join(self.devices)}")
        uuids = [w.device_uuid for w in self.workers if w.device_uuid]
        if self.pinned and len(set(uuids)) < len(uuids):
            raise KprofError(f"--devices {','.join(self.devices)}: several workers landed on one GPU; check "
                             "CUDA_VISIBLE_DEVICES")

    def measure(self, configs: Iterable[dict], on_result: Callable[[CandidateRecord], None],
                more: Callable[[], bool] = lambda: True, rounds: int | None = None) -> None:
        """Screen ``configs`` on the free workers; ``on_result`` runs in this thread for each record
        (in completion order) and may raise to stop. ``more()`` is asked before each dispatch
        (a budget): once it says no, nothing new starts and running candidates finish. A worker
        that cannot be restarted is retired; the rest go on. One worker runs in this thread."""
        if len(self.workers) == 1:
            worker = self.workers[0]
            for cfg in configs:
                if not more():
                    return
                on_result(worker.measure(cfg, rounds))
            return
        todo = iter(configs)
        given_back: list[dict] = []  # taken by a worker that then could not run them
        lock = threading.Lock()
        results: queue.Queue = queue.Queue()
        stop = threading.Event()

        def serve(worker: CandidateWorker) -> None:
            cfg = None
            try:
                while not stop.is_set():
                    with lock:
                        cfg = (given_back.pop() if given_back else next(todo, None)) if more() else None
                    if cfg is None:
                        break
                    results.put(worker.measure(cfg, rounds))
                    cfg = None
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                if cfg is not None:
                    with lock:
                        given_back.append(cfg)
                results.put(exc)
            finally:
                results.put(None)

        threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        running, failure, retired = len(threads), None, []
        try:
            while running:
                item = results.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    retired.append(item)  # that worker's thread has stopped; the others go on
                elif failure is None:
                    try:
                        on_result(item)
                    except BaseException as exc:  # noqa: BLE001 - re-raised once the workers are idle
                        failure = exc
                        stop.set()
        except BaseException:  # Ctrl-C: stop handing out work and kill the workers now
            stop.set()
            self.close()
            raise
        for t in threads:
            t.join()
        if failure is not None:
            raise failure
        if len(retired) == len(self.workers):
            raise retired[0]

    def close(self) -> None:
        for w in self.workers:
            w.close()
