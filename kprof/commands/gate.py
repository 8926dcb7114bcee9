"""``kprof gate`` as use cases: a method against itself at a git revision in one run, or a
stored Result against a history of Results."""

from __future__ import annotations

from pathlib import Path

from kprof.commands.compare import run_pairs
from kprof.commands.session import MeasurementSession, bad_observation_error
from kprof.core.errors import UsageError
from kprof.measure.harness import Progress
from kprof.methods.registry import at_revision
from kprof.results.gate import GateReport, history_gate, load_gateable, load_history, same_run_gate
from kprof.results.result import Result

GPU_DEFAULT_METHODS = ("santa", "triton-dense")
CPU_DEFAULT_METHODS = ("triton-dense",)


def against_revision(session: MeasurementSession, rev: str, methods: tuple[str, ...], threshold: float,
                     progress: Progress | None = None) -> tuple[GateReport, Result]:
    """Each method now and as it was at ``rev``, in the same rounds; the verdict from that run."""
    if any("@" in m.split("=", 1)[0] for m in methods):  # NAME@REV or MODULE:NAME@REV
        raise UsageError("--against compares each --method with itself at REV: pass plain method specs")
    methods = methods or (GPU_DEFAULT_METHODS if session.target.is_gpu else CPU_DEFAULT_METHODS)
    names, pairs = [], []
    for spec in methods:
        pairs.append((len(names), len(names) + 1))
        names += [at_revision(spec, rev), spec]
    session.keep_invalid = True  # a failed row makes the gate INCOMPARABLE (exit 4), not a failed check (3)
    result = run_pairs(session, names, pairs, progress)
    broken = [m.label for m in result.methods if not m.validation.passed or m.faults]
    if bad := bad_observation_error(result):
        broken.append(bad)
    report = same_run_gate(result, [(names[b], names[c]) for b, c in pairs], threshold)
    if broken:
        report.verdict = "INCOMPARABLE"
        report.reasons = [f"not comparable: {', '.join(broken)} failed validation, reported a fault or had bad "
                          "observations"]
    return report, result


def against_history(baselines: list[str], candidate: str, threshold: float, metric: str) -> GateReport:
    """A stored Result against the Results of a history (folders or files)."""
    cand = load_gateable(candidate, "candidate")
    history, names = load_history(baselines)
    return history_gate(history, cand, threshold, metric, names=names)


def history_size(folder: Path) -> int:
    """Results in a history folder (what ``--update-baseline`` grows)."""
    return sum(1 for f in folder.glob("*.json") if not f.name.startswith("latest")) if folder.is_dir() else 0


def is_new_history(folder: Path) -> bool:
    """A history folder with no Result yet (the first ``--update-baseline`` starts it)."""
    return not folder.exists() or not any(folder.glob("*.json"))
