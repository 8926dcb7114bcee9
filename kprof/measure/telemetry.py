"""NVML telemetry sampled in a background thread while rounds run, summarised per round; the
harness gets it as an observer (:class:`Telemetry`)."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field

from kprof.measure import nvml
from kprof.measure.observer import RunObserver

# a round whose SM clock dips below this share of the clock seen across the run counts as throttled
CLOCK_DIP = 0.90


@dataclass(frozen=True)
class RoundTelemetry:
    round: int
    samples: int
    sm_clock_mhz_min: int
    sm_clock_mhz_mean: float
    mem_clock_mhz_min: int
    temperature_c_max: int
    power_w_mean: float
    throttle_reasons: list[str] = field(default_factory=list)
    throttled: bool = False


@dataclass
class TelemetryReport:
    available: bool
    interval_ms: float
    rounds: list[RoundTelemetry] = field(default_factory=list)
    note: str = ""

    @property
    def throttled_rounds(self) -> list[int]:
        return [r.round for r in self.rounds if r.throttled]

    def throttled_flags(self, rounds: int) -> list[bool]:
        """Whether each of the first ``rounds`` rounds was throttled (all False without NVML)."""
        flags = [False] * rounds
        for r in self.throttled_rounds:
            if r < rounds:
                flags[r] = True
        return flags

    def to_dict(self) -> dict:
        return asdict(self)


class TelemetrySampler:
    """``with TelemetrySampler(index) as t: ... t.begin_round(r) ... t.end_round()``.

    Sampling runs on its own thread (NVML calls take tens of microseconds, so they must not sit
    in the timed loop). Without NVML the sampler is inert and the report says so.
    """

    def __init__(self, device_index: int | None, interval_ms: float = 20.0):
        self.device_index = device_index
        self.interval_ms = interval_ms
        self._samples: list[tuple[int, nvml.GpuSample]] = []
        self._round = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._session = None
        self._handle = None
        self.available = False

    def __enter__(self) -> "TelemetrySampler":
        if self.device_index is None:
            return self
        self._session = nvml.nvml_session()
        self.available = self._session.__enter__()
        if self.available:
            try:
                self._handle = nvml.device_handle(self.device_index)
                nvml.sample(self._handle)
            except Exception:
                self.available = False
        if self.available:
            self._thread = threading.Thread(target=self._loop, name="kprof-telemetry", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._session is not None:
            self._session.__exit__(None, None, None)

    def begin_round(self, r: int) -> None:
        with self._lock:
            self._round = r
        if self.available:
            self._take()  # at least one sample per round, even for very short rounds

    def end_round(self) -> None:
        if self.available:
            self._take()
        with self._lock:
            self._round = -1

    def _take(self) -> None:
        try:
            s = nvml.sample(self._handle)
        except Exception:
            return
        with self._lock:
            if self._round >= 0:
                self._samples.append((self._round, s))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_ms / 1000):
            self._take()

    def report(self) -> TelemetryReport:
        if not self.available:
            why = "no GPU" if self.device_index is None else "NVML unavailable"
            return TelemetryReport(False, self.interval_ms, note=f"telemetry not sampled ({why})")
        by_round: dict[int, list[nvml.GpuSample]] = {}
        for r, s in self._samples:
            by_round.setdefault(r, []).append(s)
        peak = max((s.sm_clock_mhz for _, s in self._samples), default=0)
        rounds = []
        for r in sorted(by_round):
            ss = by_round[r]
            mask = 0
            for s in ss:
                mask |= s.throttle_mask
            clock_min = min(s.sm_clock_mhz for s in ss)
            throttled = any(s.throttled for s in ss) or clock_min < CLOCK_DIP * peak
            rounds.append(RoundTelemetry(
                round=r,
                samples=len(ss),
                sm_clock_mhz_min=clock_min,
                sm_clock_mhz_mean=sum(s.sm_clock_mhz for s in ss) / len(ss),
                mem_clock_mhz_min=min(s.mem_clock_mhz for s in ss),
                temperature_c_max=max(s.temperature_c for s in ss),
                power_w_mean=sum(s.power_w for s in ss) / len(ss),
                throttle_reasons=nvml.decode_throttle(mask & ~0x1),  # idle between rounds is expected
                throttled=throttled,
            ))
        return TelemetryReport(True, self.interval_ms, rounds)


class Telemetry(RunObserver):
    """NVML telemetry as a harness observer: a sampler per run, each round's samples tagged with
    the round. ``device_index`` None: nothing is sampled and the report says so."""

    def __init__(self, device_index: int | None):
        self.device_index = device_index
        self.sampler: TelemetrySampler | None = None

    def run_started(self) -> None:
        self.sampler = TelemetrySampler(self.device_index)
        self.sampler.__enter__()

    def round_started(self, r: int) -> None:
        self.sampler.begin_round(r)

    def round_finished(self, r: int) -> None:
        self.sampler.end_round()

    def throttled_flags(self, rounds: int) -> list[bool]:
        return self.sampler.report().throttled_flags(rounds)

    def run_finished(self) -> None:
        self.sampler.__exit__(None, None, None)

    def annotate(self, measurement) -> None:
        measurement.telemetry = self.sampler.report()
