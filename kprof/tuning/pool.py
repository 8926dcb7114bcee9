"""``WorkerPool``: screening fanned out over the GPUs of one host, one worker process per GPU.

Each worker is a :class:`CandidateWorker` pinned to one GPU through ``CUDA_VISIBLE_DEVICES``, so
it has its own CUDA context, eviction buffer and host gate, and a crash or hang restarts that
worker alone. Candidates go to whichever worker is free; results come back to the caller's
thread, which alone writes the cache. Paired confirmation of finalists is not spread: rounds
interleaved on two devices are not a paired design, so :attr:`confirmer` (the first device)
runs all of it. GPUs of different models would give screening times that do not compare, so a
pool of mixed models is refused.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Callable, Iterable, Sequence

from kprof.core.errors import KprofError
from kprof.tuning.cache import CandidateRecord
from kprof.tuning.worker import CandidateWorker, WorkerSpec


def parse_devices(text: str | None, gpu_count: int) -> tuple[str, ...]:
    """``--devices``: ``all`` or ``0,1,...`` -> the CUDA_VISIBLE_DEVICES value of each worker.
    Without a GPU the values only count interpreter workers (no pinning)."""
    if text is None:
        return ()
    if text.strip() == "all":
        return tuple(str(i) for i in range(max(1, gpu_count)))
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise KprofError(f"--devices {text!r}: write all, or GPU indices such as 0,1,3") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise KprofError(f"--devices {text!r}: give distinct GPU indices such as 0,1,3, or all")
    if gpu_count and max(ids) >= gpu_count:
        raise KprofError(f"--devices {text!r}: this host has {gpu_count} GPU(s), indices 0 to {gpu_count - 1}")
    return tuple(str(i) for i in ids)


class WorkerPool:
    def __init__(self, spec: WorkerSpec, devices: Sequence[str], timeout_s: float, pin: bool = True):
        """``devices``: one worker per entry, pinned to that GPU when ``pin`` (interpreter workers
        are not pinned); no entries: one unpinned worker, the single-device tune."""
        specs = [dataclasses.replace(spec, visible_device=d if pin else None) for d in devices] or [spec]
        self.devices = tuple(devices) or ("default",)
        self.workers = [CandidateWorker(s, timeout_s) for s in specs]

    @property
    def confirmer(self) -> CandidateWorker:
        return self.workers[0]

    def start(self) -> None:
        """Start every worker (in parallel) and refuse GPUs of different models."""
        if len(self.workers) == 1:
            return
        errors: list[BaseException] = []

        def start(w):
            try:
                w.start()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        names = {w.device_name for w in self.workers}
        if len(names) > 1:
            raise KprofError(f"--devices {','.join(self.devices)} mixes GPU models ({', '.join(sorted(names))}): their "
                             "times do not compare and they never share a tuning cache; pass GPUs of one model")

    def measure(self, configs: Iterable[dict], on_result: Callable[[CandidateRecord], None],
                more: Callable[[], bool] = lambda: True, rounds: int | None = None) -> None:
        """Screen ``configs`` on the free workers; ``on_result`` runs in this thread for each record
        (in completion order) and may raise to stop. ``more()`` is asked before each dispatch
        (a budget): once it says no, nothing new starts and running candidates finish."""
        todo = iter(configs)
        lock = threading.Lock()
        results: queue.Queue = queue.Queue()
        stop = threading.Event()

        def serve(worker: CandidateWorker) -> None:
            while not stop.is_set():
                with lock:
                    if not more():
                        break
                    cfg = next(todo, None)
                if cfg is None:
                    break
                try:
                    results.put(worker.measure(cfg, rounds))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    results.put(exc)
                    break
            results.put(None)

        threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        running, failure = len(threads), None
        while running:
            item = results.get()
            if item is None:
                running -= 1
            elif failure is not None:
                continue  # draining: already stopping
            elif isinstance(item, BaseException):
                failure = item
                stop.set()
            else:
                try:
                    on_result(item)
                except BaseException as exc:  # noqa: BLE001 - re-raised once the workers are idle
                    failure = exc
                    stop.set()
        for t in threads:
            t.join()
        if failure is not None:
            raise failure

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def close(self) -> None:
        for w in self.workers:
            w.close()
