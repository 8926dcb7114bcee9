"""Candidate measurement in a separate process that may crash, hang or be killed.

A compile error, an out-of-resources launch, an illegal memory access or a hang must not end
a tuning run or poison the parent's CUDA context: every candidate is prepared, validated and
timed in a worker process; the parent waits with a timeout, and replaces a worker that died.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from kprof.core import device_pinning
from kprof.core.target import resolve_target
from kprof.measure.harness import Harness, TimedOp
from kprof.measure.precision import PrecisionStop
from kprof.measure.protocol import TimingProtocol
from kprof.measure.rounds import round_summaries
from kprof.methods import get_method
from kprof.methods.registry import load_plugins
from kprof.methods.validation import compare_outputs
from kprof.tuning.cache import CandidateRecord
from kprof.workloads import resolve_workload


@dataclass(frozen=True)
class WorkerSpec:
    method: str  # method spec, e.g. "triton-dense" or "santa:p=16"
    workload: str  # spec name or workload file
    device: str  # "auto" | "cuda" | "cpu"
    launch: str
    rounds: int
    observations: int
    warmup: int
    evict_mib: int
    visible_device: str | None = None  # CUDA_VISIBLE_DEVICES of this worker's process (one GPU of a host)
    eviction: str = "read-write"  # kprof.measure.protocol.EVICTION_MODES


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _serve(conn, spec: WorkerSpec) -> None:
    """Worker loop: ("measure", cfg[, rounds]) -> CandidateRecord fields; ("paired", cfg, protocol) ->
    observations."""
    load_plugins()
    target = resolve_target(spec.device)
    workload = resolve_workload(spec.workload, device=target.device)
    method = get_method(spec.method)
    dense_reference = None if method.selection_dependent else method.reference(workload)
    screening = Harness(target.device,
                        TimingProtocol(rounds=spec.rounds, warmup_pairs=0, observations=spec.observations,
                                       evict_mib=spec.evict_mib, eviction=spec.eviction),
                        telemetry=False)
    if target.is_gpu:
        props = torch.cuda.get_device_properties(target.device)
        conn.send(("ready", props.name, str(getattr(props, "uuid", ""))))
    else:
        conn.send(("ready", "cpu-interpreter", ""))
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        cfg = msg[1]
        try:
            prepared = method.prepare(workload, target, {spec.launch: cfg})
            if msg[0] == "paired":
                base = method.prepare(workload, target, {})
                protocol = TimingProtocol(**msg[2])
                harness = Harness(target.device, protocol, telemetry=False, eviction=screening.eviction)
                stop = None if protocol.precision is None else PrecisionStop(
                    protocol.precision, [(0, 1)], protocol.level, protocol.max_time_s)
                m = harness.paired([TimedOp("default", base.run), TimedOp("candidate", prepared.run)], stop=stop)
                conn.send(("paired", m.observations.tolist(), m.orders, m.cycle))
                continue
            if prepared.output is not None:
                prepared.output.fill_(float("nan"))
            out = prepared.run().clone()
            ref = method.reference_for(workload, prepared) if method.selection_dependent else dense_reference
            report = compare_outputs(out, ref)
            if not report.passed:
                conn.send(("rejected", f"wrong answer: {report.status}"))
                continue
            names = [s.name for s in prepared.stages]
            if spec.launch not in names:  # e.g. santa's attend.REDUCE=1 folds its reduce into attend
                conn.send(("failed", f"this configuration makes no {spec.launch!r} launch (it makes "
                                     f"{', '.join(names)}): nothing to time; tune another launch"))
                continue
            stages = [TimedOp(s.name, s.launch) for s in prepared.stages]
            index = names.index(spec.launch)
            for _ in range(spec.warmup):
                prepared.run()
            harness = screening if len(msg) < 3 or msg[2] is None else Harness(
                target.device, replace(screening.protocol, rounds=msg[2]), telemetry=False,
                eviction=screening.eviction)
            obs = harness.launch(stages, index, spec.observations).observations[0]
            conn.send(("ok", round_summaries(obs).tolist()))
        except Exception as exc:  # compile errors, out of resources, bad configs: recorded, not fatal
            conn.send(("failed", _one_line(exc)))
            if target.is_gpu:
                try:
                    torch.cuda.synchronize()
                except Exception:  # a sticky CUDA error: this process is unusable, let the parent replace it
                    return


def entry(conn, spec_fields: dict) -> None:
    """The worker process's body (started through :mod:`kprof.core.device_pinning`)."""
    spec = WorkerSpec(**spec_fields)
    # the harness's warnings reach the user's terminal as one line each, not as a source listing
    warnings.formatwarning = lambda message, *args, **kwargs: f"warning (tuning worker): {message}\n"
    try:
        _serve(conn, spec)
    except Exception:
        conn.send(("crashed", traceback.format_exc(limit=3)))


class CandidateWorker:
    """Parent-side handle of one worker process; restarted transparently after a death or hang."""

    def __init__(self, spec: WorkerSpec, timeout_s: float, start_timeout_s: float = 600.0):
        self.spec = spec
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self.restarts = 0
        self.device_name: str | None = None  # what the worker process reported on start
        self.device_uuid: str = ""
        self.closed = False

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=device_pinning.start, daemon=True,
                                       args=(self.spec.visible_device, f"{__name__}:entry", child, asdict(self.spec)))
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise RuntimeError("tuning worker did not start in time")
        msg = parent.recv()
        if msg[0] != "ready":
            self._kill()
            raise RuntimeError(f"tuning worker failed to start: {msg[1] if len(msg) > 1 else msg}")
        self.device_name, self.device_uuid = msg[1], msg[2]

    def start(self) -> None:
        """Start the process now (otherwise it starts with the first request)."""
        if self._proc is None or not self._proc.is_alive():
            self._start()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc = self._conn = None

    def _request(self, msg) -> tuple:
        if self.closed:
            raise RuntimeError("tuning worker used after close()")
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self.restarts += 1
            self._start()
        self._conn.send(msg)
        try:
            if not self._conn.poll(self.timeout_s):
                self._kill()
                return ("failed", f"timeout after {self.timeout_s:.0f} s (worker killed)")
            return self._conn.recv()
        except (EOFError, ConnectionResetError, BrokenPipeError):
            code = self._proc.exitcode if self._proc else None
            self._kill()
            return ("failed", f"worker process died (exit code {code})")

    def measure(self, config: dict, rounds: int | None = None) -> CandidateRecord:
        """Screen one config (``rounds`` screening rounds instead of the spec's, if given)."""
        t0 = time.perf_counter()
        reply = self._request(("measure", config, rounds))
        seconds = time.perf_counter() - t0
        if reply[0] == "ok":
            rounds = reply[1]
            return CandidateRecord(config, "ok", float(np.median(rounds)), rounds, seconds=seconds)
        status = "rejected" if reply[0] == "rejected" else "failed"
        return CandidateRecord(config, status, reason=str(reply[1]).strip().splitlines()[-1][:300], seconds=seconds,
                               timeout_s=self.timeout_s)

    def paired(self, config: dict, protocol: dict) -> tuple[np.ndarray, list, int] | str:
        """Observations ``[2, rounds, obs]`` (default, candidate), each round's order and the
        design's cycle; or the reason it failed."""
        reply = self._request(("paired", config, protocol))
        if reply[0] == "paired":
            return np.asarray(reply[1]), [tuple(o) for o in reply[2]], int(reply[3])
        return str(reply[1])

    def close(self) -> None:
        self.closed = True
        if self._conn is not None:
            try:
                self._conn.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        if self._proc is not None:
            self._proc.join(5)
        self._kill()
