"""``kprof gate`` as use cases: a method against itself at a git revision in one run, or a
stored Result against a history of Results. Gating stored Results loads no torch: the
measuring modules are imported by the ``--against`` run only."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.commands.report import bad_observation_error
from kprof.core.atomic import atomic_write_text
from kprof.core.errors import UsageError
from kprof.results.gate import (  # noqa: F401 (format_value, value_unit: for the CLI's table)
    EXIT,
    EXIT_ERROR,
    MIN_HISTORY,
    GateReport,
    add_to_history,
    already_in_history,
    format_value,
    history_gate,
    load_gateable,
    load_history,
    run_identity,
    same_run_gate,
    summary_markdown,
    value_unit,
)
from kprof.results.schema import Result, finite

if TYPE_CHECKING:
    from kprof.commands.session import MeasurementSession
    from kprof.measure.harness import Progress

GPU_DEFAULT_METHODS = ("santa", "triton-dense")
CPU_DEFAULT_METHODS = ("triton-dense",)


def against_revision(session: MeasurementSession, rev: str, methods: tuple[str, ...], threshold: float,
                     progress: Progress | None = None) -> tuple[GateReport, Result]:
    """Each method now and as it was at ``rev``, in the same rounds; the verdict from that run."""
    from kprof.commands.compare import run_pairs
    from kprof.methods.registry import at_revision

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
    twins = [n for r, n in zip(history, names) if run_identity(r) == run_identity(cand)]
    left_out = bool(twins) and len(twins) < len(history)  # a run judged against itself agrees exactly
    if left_out:
        history, names = zip(*[(r, n) for r, n in zip(history, names) if n not in twins])
    report = history_gate(list(history), cand, threshold, metric, names=list(names))
    if twins:
        report.warnings.insert(0, f"the candidate is the run in {', '.join(twins)}: " + (
            "left out of the history it is judged against" if left_out else
            "the history holds nothing else, so this compares the run with itself"))
    return report


def history_size(folder: Path) -> int:
    """Results in a history folder (what ``--update-baseline`` grows)."""
    return sum(1 for f in folder.glob("*.json") if not f.name.startswith("latest")) if folder.is_dir() else 0


def is_new_history(folder: Path) -> bool:
    """A history folder with no Result yet (the first ``--update-baseline`` starts it)."""
    return not folder.exists() or not any(folder.glob("*.json"))


def gate_request(rev: str | None, methods: list[str], workload: str | None, device: str, config_mode: str,
                 overrides: dict, out: str | None, force: bool, summary_md: str | None) -> None:
    """Everything ``kprof gate`` names checked before anything loads (UsageError, exit 2)."""
    from kprof.commands import preflight
    from kprof.commands.report import check_destination

    preflight.check_out_file(summary_md, force=True, option="--summary-md")
    if rev is not None:
        from kprof.core.target import resolve_target

        check_destination(out, force)
        preflight.check_revision(rev)
        preflight.check_methods(methods)
        preflight.check_config(config_mode, methods)
        preflight.check_workloads([workload])
        preflight.check_protocol(resolve_target(device).is_gpu, overrides, 2 * max(1, len(methods)))



def revision_run(rev: str, methods: list[str], threshold: float, workload: str | None, device: str,
                 config_mode: str, overrides: dict, out: str | None, force: bool,
                 progress: Progress | None = None) -> tuple[GateReport, Result, Path]:
    """The ``--against`` run: its report, its Result, and where the Result was saved (beside
    ``out`` if that appeared during the run)."""
    from kprof.commands.report import save_run
    from kprof.commands.session import MeasurementSession

    status = progress.status if progress else (lambda s: None)
    session = MeasurementSession.open(device, workload, overrides, status, config_mode)
    report, result = against_revision(session, rev, tuple(methods), threshold, progress)
    return report, result, save_run(result, out, force)


@dataclass
class HistoryUpdate:
    """What ``--update-baseline`` did: the file added (None if refused), a line saying so, and the
    exit code it calls for: 0 while a growing history takes any comparable run, the verdict's (or 5)
    when it refused, None to exit with the verdict's as usual."""

    added: Path | None
    message: str
    exit_code: int | None = None


def start_history(candidate: str, folder: Path) -> HistoryUpdate | None:
    """A new or empty history folder starts with the candidate; None when it already has runs."""
    if not is_new_history(folder):
        return None
    added = add_to_history(Path(candidate), folder)
    return HistoryUpdate(added, f"started the history {folder} with {added.name}; verdicts need {MIN_HISTORY} "
                                "runs of this setup")


def update_history(report: GateReport, candidate: str, folder: Path, force: bool) -> HistoryUpdate:
    """The history's policy: while it holds fewer than MIN_HISTORY runs it takes any comparable
    run (it cannot judge yet); then only a SAME run, or with ``force`` any but INCOMPARABLE."""
    if (twin := already_in_history(Path(candidate), folder)) is not None:
        return HistoryUpdate(None, f"not added to the history: it already holds this run as {twin}", exit_code=None)
    if history_size(folder) < MIN_HISTORY and report.verdict != "INCOMPARABLE":
        added = add_to_history(Path(candidate), folder)
        return HistoryUpdate(added, f"added {candidate} to the history as {added}: a history of fewer than "
                                    f"{MIN_HISTORY} runs cannot judge yet, so it takes any comparable run (this one "
                                    f"was {report.verdict})", exit_code=0)
    if report.verdict == "INCOMPARABLE" or (report.verdict != "SAME" and not force):
        why = ("it is INCOMPARABLE with the history (see above); a history holds runs of one setup only"
               if report.verdict == "INCOMPARABLE" else
               f"the verdict is {report.verdict}, and a history of an unchanged setup takes SAME runs; after "
               "an intended change start a new history folder, or pass --force")
        return HistoryUpdate(None, f"not added to the history: {why}", EXIT[report.verdict] or EXIT_ERROR)
    added = add_to_history(Path(candidate), folder)
    return HistoryUpdate(added, f"added {candidate} to the history as {added}")


def append_summary(path: str, report: GateReport) -> None:
    """Append the markdown summary, as CI step summaries ($GITHUB_STEP_SUMMARY) are."""
    before = Path(path).read_text() if Path(path).is_file() else ""
    atomic_write_text(path, before + ("\n" if before else "") + summary_markdown(report))


def report_json(report: GateReport) -> str:
    return json.dumps(finite(asdict(report)), indent=2, default=str)


def exit_code(report: GateReport, uncertain: str = "fail") -> int:
    """The verdict's exit code; UNCERTAIN passes (0) with ``uncertain="pass"``."""
    return 0 if report.verdict == "UNCERTAIN" and uncertain == "pass" else EXIT[report.verdict]
