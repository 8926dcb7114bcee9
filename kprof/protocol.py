"""The timing protocol's parameters (SANTA++ Appendix E) as one explicit, recorded value."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from kprof.errors import KprofError


@dataclass(frozen=True)
class TimingProtocol:
    """Every choice that changes the numbers, stored with each Result.

    ``rounds`` paired rounds; each has ``warmup_pairs`` untimed interleaved invocations of every
    method, then ``observations`` timed ones per method, interleaved. ``order="round"`` is the
    paper's: the starting method rotates between rounds only. ``order="pair"`` (default) also
    rotates it between adjacent pairs (A,B, B,A, A,B... in the paper's terms, ABBA): on the H200
    a period-2 artifact of eager launches made whichever method led its pairs 2-5% slower or
    faster for a whole round, which round-only alternation turns into a +-2% A/A interval. ``evict_mib`` of eviction buffer is read and written before every
    measured invocation unless ``host_bound``. ``graph`` times CUDA-graph replays.
    """

    rounds: int = 20
    warmup_pairs: int = 300
    observations: int = 1000
    stage_observations: int = 500
    evict_mib: int = 512
    graph: bool = False
    host_bound: bool = False
    seed: int = 0
    order: str = "pair"
    sync_every: int = 0  # 0: host syncs once per round; k: also after every k observations
    bootstrap_resamples: int = 10_000
    level: float = 0.95

    def __post_init__(self) -> None:
        for name in ("rounds", "observations", "stage_observations", "bootstrap_resamples"):
            if getattr(self, name) < 1:
                raise KprofError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.warmup_pairs < 0 or self.evict_mib < 0:
            raise KprofError("--warmup-pairs and --evict-mib must not be negative")
        if self.order not in ("pair", "round"):
            raise KprofError(f"--order must be 'pair' or 'round', got {self.order!r}")
        if not 0.5 < self.level < 1:
            raise KprofError(f"confidence level must be in (0.5, 1), got {self.level}")

    @property
    def mode(self) -> str:
        """A label that says what the numbers measure."""
        if self.host_bound:
            return "host-bound (no eviction; host launch overhead included)"
        return ("CUDA-graph replay" if self.graph else "device-bound") + f" (eviction {self.evict_mib} MiB before each call)"

    def leads(self, round_index: int, observation: int) -> int:
        """Rotation offset of the method order for one observation (see :func:`runner.round_order`)."""
        return round_index + observation if self.order == "pair" else round_index

    def to_dict(self) -> dict:
        return asdict(self)

    def with_overrides(self, **kw) -> "TimingProtocol":
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


PAPER = TimingProtocol()
# The Triton interpreter runs a decode step in ~0.1 s, so the CPU embedded default keeps the
# structure of the protocol (rounds, interleaving, alternation, eviction) with tiny counts.
CPU_EMBEDDED = TimingProtocol(rounds=5, warmup_pairs=1, observations=5, stage_observations=3, evict_mib=8,
                              bootstrap_resamples=2000)


def default_protocol(on_gpu: bool) -> TimingProtocol:
    return PAPER if on_gpu else CPU_EMBEDDED
