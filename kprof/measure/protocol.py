"""The timing protocol's parameters (SANTA++ Appendix E) as one explicit, recorded value."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from kprof.core.errors import UsageError

EVICTION_MODES = ("read-write", "read")
LOOK_SPEND = 2.0  # a precision-stopped run computes its intervals at 1 - (1 - level) / LOOK_SPEND (precision.py)


@dataclass(frozen=True)
class TimingProtocol:
    """Every choice that changes the numbers, stored with each Result.

    ``rounds`` paired rounds (``None``: the balanced design's default, at least ``min_rounds``
    and ``min_pair_cycles`` for every pair; a given number is rounded up to whole design
    cycles); each has
    ``warmup_pairs`` untimed interleaved invocations of every method, then ``observations``
    timed ones per method, interleaved in the round's order (:mod:`kprof.measure.design`).
    ``evict_mib`` of eviction buffer is read and written before every measured invocation
    unless ``host_bound``; ``eviction="read"`` only reads it, so L2 holds clean lines when the
    timed call starts and the call pays no write-back of the buffer (:mod:`kprof.measure.eviction`).
    ``precision`` (a relative half-width, 0.005 = +-0.5%) replaces a fixed round count: whole
    design cycles run until every interval is that narrow, for at most ``max_time_s`` seconds of
    timing (:mod:`kprof.measure.precision`). ``initial_warmup_pairs`` more warm-up invocations
    precede the first round only. ``graph`` times CUDA-graph replays. ``launch_phase`` balances the
    parity of each timed call's position in the launch stream (:mod:`kprof.measure.harness`).
    """

    rounds: int | None = None
    precision: float | None = None
    max_time_s: float = 60.0
    min_rounds: int = 20
    min_pair_cycles: int = 10
    warmup_pairs: int = 300
    initial_warmup_pairs: int = 0
    observations: int = 1000
    stage_observations: int = 500
    evict_mib: int = 512
    eviction: str = "read-write"
    graph: bool = False
    host_bound: bool = False
    launch_phase: bool = True
    level: float = 0.95

    def __post_init__(self) -> None:
        self._check_types()
        for name in ("rounds", "min_rounds", "min_pair_cycles", "observations", "stage_observations"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.precision is not None and self.rounds is not None:
            raise UsageError("--rounds fixes the run's length and --precision stops it on the data: pass one")
        if self.precision is not None and not 0 < self.precision < 0.5:
            raise UsageError(f"--precision must lie between 0 and 50%, got {100 * self.precision:g}%: write e.g. 0.5%")
        if not self.max_time_s > 0:
            raise UsageError(f"--max-time must be positive, got {self.max_time_s:g} s")
        for name in ("warmup_pairs", "evict_mib", "initial_warmup_pairs"):
            if getattr(self, name) < 0:
                raise UsageError(f"--{name.replace('_', '-')} must not be negative, got {getattr(self, name)}")
        if self.eviction not in EVICTION_MODES:
            raise UsageError(f"--eviction must be one of {', '.join(EVICTION_MODES)}, got {self.eviction!r}")
        if not 0.5 < self.level < 1:
            raise UsageError(f"confidence level must be in (0.5, 1), got {self.level}")

    def _check_types(self) -> None:
        """A number given as text or a flag as a number is named here, not met as a TypeError later."""
        for f in fields(self):
            value, kind = getattr(self, f.name), f.type.replace(" | None", "")
            if value is None and "None" in f.type:
                continue
            whole = kind == "int" and isinstance(value, int) and not isinstance(value, bool)
            real = kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool)
            flag = kind == "bool" and isinstance(value, bool)
            text = kind == "str" and isinstance(value, str)
            if not (whole or real or flag or text):
                want = {"int": "a whole number", "float": "a number", "bool": "True or False", "str": "a string"}[kind]
                example = {"rounds": 20, "precision": 0.005}.get(f.name, f.default)
                raise UsageError(f"{f.name} must be {want}, got {value!r} ({type(value).__name__}): pass e.g. "
                                 f"{f.name}={example!r}")

    @property
    def mode(self) -> str:
        """A label that says what the numbers measure."""
        if self.host_bound:
            return "host-bound (no eviction; host launch overhead included)"
        return (("CUDA-graph replay" if self.graph else "device-bound")
                + f" (eviction {self.evict_mib} MiB{' read-only' if self.eviction == 'read' else ''} before each call)")

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def interval_level(self) -> float:
        """The level intervals are computed at: spent over looks when the run stops on precision."""
        return self.level if self.precision is None else 1 - (1 - self.level) / LOOK_SPEND

    def with_overrides(self, **kw) -> "TimingProtocol":
        """This protocol with the given values (None: keep); a fixed round count turns the
        precision stop off and a precision target turns a fixed count off."""
        kw = {k: v for k, v in kw.items() if v is not None}
        if "rounds" in kw and "precision" not in kw:
            kw["precision"] = None
        elif "precision" in kw and "rounds" not in kw:
            kw["rounds"] = None
        return replace(self, **kw)


PAPER = TimingProtocol()  # SANTA++ Appendix E: 20 rounds of 300 warm-up pairs and 1,000 observations
# The GPU default answers in seconds: short rounds, run until every speedup is within +-0.5%.
GPU_DEFAULT = TimingProtocol(precision=0.005, warmup_pairs=20, initial_warmup_pairs=300, observations=100)
# The Triton interpreter is slow, so the CPU embedded default keeps the structure of the
# protocol (rounds, interleaving, alternation, eviction) with tiny counts.
CPU_EMBEDDED = TimingProtocol(min_rounds=12, min_pair_cycles=6, warmup_pairs=1, observations=3, stage_observations=3,
                              evict_mib=8)


def default_protocol(on_gpu: bool) -> TimingProtocol:
    return GPU_DEFAULT if on_gpu else CPU_EMBEDDED
