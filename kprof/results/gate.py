"""Performance regression gates, from the same run or across runs.

Same run (sound): ``kprof gate --against REV`` times each method as it is now and as it was at
REV in the same rounds of a balanced design; the verdict rests on the paired interval of
``now / then`` latency.

Across runs: a candidate Result against a history of Results of the same setup. Each run's
speedup is anchor-normalised (candidate against that run's own baseline method), so a machine
that runs everything 2% slower does not look like a regression. Runs differ by more than their
within-run intervals say (buffer placement, clocks, the machine), so the history's spread of
log speedups is that run-to-run variance; a new run is judged by the prediction interval
``mean +- t(h-1) * s * sqrt(1 + 1/h)``. Fewer than three history runs: warned.

A ratio above 1 is a regression. With threshold ``t``:

- SLOWER: the interval lies above 1 and the estimate above ``1 + t``;
- FASTER: the interval lies below 1 and the estimate below ``1 - t``;
- SAME: the interval lies within ``[1 - t, 1 + t]``;
- UNCERTAIN: anything else (too wide, or a change that is real but may be within the threshold).

Several methods are judged as a family: SLOWER and FASTER also need a Holm-adjusted p-value
within the interval's tail, so a gate over many methods false-alarms no more often than one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special  # t and chi-squared quantiles; scipy.stats takes twice as long to import

from kprof.core.atomic import atomic_path
from kprof.core.errors import KprofError
from kprof.measure.protocol import PAPER
from kprof.measure.stats import BAD_LIMIT, Interval
from kprof.results.rows import over_bad_limit
from kprof.results.schema import Result
from kprof.results.store import load_result

EXIT = {"FASTER": 0, "SAME": 0, "SLOWER": 1, "UNCERTAIN": 3, "INCOMPARABLE": 4}
EXIT_USAGE, EXIT_ERROR = 2, 5
WORST_FIRST = ["INCOMPARABLE", "SLOWER", "UNCERTAIN", "SAME", "FASTER"]
MIN_HISTORY = 3
POWER = 0.90
# what changes the numbers; the round count does not (a precision-stopped run sets its own)
_PROTOCOL_KEYS = ("warmup_pairs", "observations", "evict_mib", "eviction", "graph", "host_bound", "launch_phase")
_PROTOCOL_DEFAULTS = PAPER.to_dict()
CROSS_RUN = "prediction interval over the history's run-to-run spread (t, h-1 df)"
ONE_RUN = "the two runs' own intervals only (one history run: the run-to-run spread is unknown)"
SAME_RUN = "same-run paired interval"


class GateInputError(KprofError):
    """An unreadable or invalid Result or history: exit 5."""

    exit_code = EXIT_ERROR


@dataclass(frozen=True)
class GateRow:
    method: str
    verdict: str
    ratio: Interval | None  # now / then latency (>1: slower)
    baseline_value: float | None  # the history's (or REV's) speedup, or latency in us
    candidate_value: float | None
    mde: float | None = None  # smallest regression flagged SLOWER with 90% probability (0.04 = 4%)
    note: str = ""


@dataclass
class GateReport:
    verdict: str
    rows: list[GateRow]
    reasons: list[str]  # why the runs are incomparable
    warnings: list[str]
    metric: str
    threshold: float
    method: str  # how the intervals were made


def verdict(iv: Interval | None, threshold: float) -> str:
    if iv is None or not iv.has_interval:
        return "UNCERTAIN"
    if iv.low > 1 and iv.estimate > 1 + threshold:
        return "SLOWER"
    if iv.high < 1 and iv.estimate < 1 - threshold:
        return "FASTER"
    if iv.low >= 1 - threshold and iv.high <= 1 + threshold:
        return "SAME"
    return "UNCERTAIN"


def overall(rows: list[GateRow]) -> str:
    return min((r.verdict for r in rows), key=WORST_FIRST.index) if rows else "INCOMPARABLE"


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values: rejecting where they are at most alpha keeps the
    chance of any false rejection among the family at most alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def one_sided_p(iv: Interval, slower: bool) -> float:
    """The p-value of "no change" against a change in one direction, read back from an interval
    whose log is symmetric (normal or t with the interval's degrees of freedom)."""
    se = within_run_sd(iv)
    if se <= 0:
        return 1.0
    z = math.log(iv.estimate) / se
    return float(special.stdtr(iv.df or math.inf, -(z if slower else -z)))  # the t survival function


def family_verdicts(intervals: list[Interval | None], threshold: float, level: float) -> list[str]:
    """Verdicts of several rows judged at once: SLOWER and FASTER need their Holm-adjusted
    one-sided p-value within the interval's tail, so that across all rows a false alarm stays
    within 1 - level."""
    alpha = (1 - level) / 2
    ok = [iv for iv in intervals if iv is not None and iv.has_interval]
    slow = iter(holm([one_sided_p(iv, True) for iv in ok]))
    fast = iter(holm([one_sided_p(iv, False) for iv in ok]))
    out = []
    for iv in intervals:
        v = verdict(iv, threshold)
        if iv is not None and iv.has_interval:
            p_slow, p_fast = next(slow), next(fast)
            if v == "SLOWER" and p_slow > alpha or v == "FASTER" and p_fast > alpha:
                v = "UNCERTAIN"
        out.append(v)
    return out


# ---------------------------------------------------------------- numbers: a run against its history


def within_run_sd(iv: Interval) -> float:
    """A run's own standard error of its log estimate, read back from its interval."""
    if not iv.has_interval or iv.low <= 0:
        return 0.0
    df = iv.df if iv.df else math.inf
    q = special.stdtrit(df, 1 - (1 - (iv.coverage or iv.level)) / 2)
    return (math.log(iv.high) - math.log(iv.low)) / (2 * q)


SPREAD_CONFIDENCE = 0.8  # the detectable effect holds for the run-to-run spread's upper bound at this confidence


def prediction_ratio(history: np.ndarray, history_sd: np.ndarray, candidate: float, candidate_sd: float,
                     level: float = 0.95, threshold: float = 0.03) -> tuple[Interval, float]:
    """``exp(candidate - mean(history))`` with a prediction interval, and the minimum detectable
    effect. Inputs are log values (positive = slower) with each run's own standard error.

    The detectable effect is the regression flagged SLOWER with 90% probability when the
    run-to-run spread is at its 80% upper confidence bound from this history: it holds for this
    history, not only on average over histories.
    """
    h = len(history)
    d = candidate - float(np.mean(history))
    floor = max(candidate_sd, float(np.mean(history_sd)) if h else 0.0)  # no run is more precise than itself
    if h >= 2:
        s = max(float(np.std(history, ddof=1)), floor)
        se, df = s * math.sqrt(1 + 1 / h), h - 1
        upper = s * math.sqrt(df / special.chdtri(df, SPREAD_CONFIDENCE))
        se_mde = upper * math.sqrt(1 + 1 / h)
    else:  # one run: only the within-run errors are known
        se = se_mde = math.sqrt(candidate_sd**2 + (history_sd[0] if h else 0.0) ** 2)
        df = math.inf
    q = special.stdtrit(df, 1 - (1 - level) / 2)
    power = special.stdtrit(df, POWER)
    mde = max(math.exp((q + power) * se_mde), math.exp(math.log1p(threshold) + power * se_mde)) - 1
    iv = Interval(math.exp(d), math.exp(d - q * se), math.exp(d + q * se), level, CROSS_RUN if h >= 2 else ONE_RUN,
                  h, level, df=None if math.isinf(df) else int(df))
    return iv, mde


# ---------------------------------------------------------------- Results: what is comparable


def incomparable(base: Result, cand: Result) -> list[str]:
    """Reasons two Results must not be compared (device, workload, protocol)."""
    why = []
    bg, cg = base.environment.get("gpu") or {}, cand.environment.get("gpu") or {}
    if bg.get("name") != cg.get("name") or base.environment.get("execution") != cand.environment.get("execution"):
        why.append(f"device differs ({bg.get('name', base.environment.get('execution'))} vs "
                   f"{cg.get('name', cand.environment.get('execution'))})")
    if base.workload.get("content_hash") != cand.workload.get("content_hash"):
        why.append(f"workload differs ({base.workload.get('name')} {str(base.workload.get('content_hash'))[:12]} vs "
                   f"{cand.workload.get('name')} {str(cand.workload.get('content_hash'))[:12]})")
    for k in _PROTOCOL_KEYS:  # a key older Results lack took its default then
        b, c = base.protocol.get(k, _PROTOCOL_DEFAULTS[k]), cand.protocol.get(k, _PROTOCOL_DEFAULTS[k])
        if b != c:
            why.append(f"protocol {k} differs ({b} vs {c})")
    return why


def config_difference(base: dict, cand: dict) -> str:
    """'launch config: partial.BLOCK_N 64->16, ...' for the launch parameters that differ, else ''."""
    diffs = []
    for launch in sorted(set(base) | set(cand)):
        b, c = base.get(launch) or {}, cand.get(launch) or {}
        diffs += [f"{launch}.{k} {b.get(k, '-')}->{c.get(k, '-')}"
                  for k in sorted(set(b) | set(c)) if b.get(k) != c.get(k)]
    return "launch config: " + ", ".join(diffs) if diffs else ""


def load_gateable(path: str | Path, role: str) -> Result:
    """A Result the gate can judge: readable, a paired comparison, run to its end."""
    try:
        res = load_result(path)
    except KprofError as exc:
        raise GateInputError(str(exc)) from None
    if res.kind != "compare":
        raise GateInputError(f"{role} {path} is a {res.kind} Result (launches timed one by one): the gate judges "
                             "paired runs; pass a Result that kprof compare (or the API's compare) wrote")
    if res.partial:
        raise GateInputError(f"{role} {path} is a partial Result ({res.partial}): verdicts need complete runs; "
                             "run it again to the end")
    return res


def untrustworthy(res: Result) -> list[str]:
    """Rows of a Result whose times must not be judged: failed validation, faults, bad observations."""
    out = [f"{m.label} failed validation" for m in res.methods if not m.validation.passed]
    out += [f"{m.label} reported faults" for m in res.methods if m.faults]
    out += [f"{label} had {100 * share:.1f}% bad observations"
            for label, share in over_bad_limit(res, BAD_LIMIT).items()]
    return out


def _anchor(res: Result) -> str | None:
    return next((m.label for m in res.methods if m.role == "baseline"), None)


def _statistic(res: Result, label: str, metric: str) -> tuple[float, float, float] | None:
    """(log value oriented so that positive = slower, its within-run sd, the plain value); the sd is
    0 where the run gave no interval (too few rounds, or a ratio the timer cannot resolve)."""
    if metric == "latency":
        s = res.summaries.get(label)
        if s is None or not s.median_us.estimate or s.median_us.estimate != s.median_us.estimate:
            return None
        return math.log(s.median_us.estimate), within_run_sd(s.median_us), s.median_us.estimate
    anchor = _anchor(res)
    sp = next((x for x in res.speedups if x.candidate == label and x.baseline == anchor), None)
    if sp is None or not sp.interval.estimate or sp.interval.estimate != sp.interval.estimate:
        return None
    return -math.log(sp.interval.estimate), within_run_sd(sp.interval), sp.interval.estimate


def history_gate(history: list[Result], cand: Result, threshold: float = 0.03, metric: str = "speedup",
                 level: float = 0.95, names: list[str] | None = None) -> GateReport:
    """A candidate Result against a history of Results of the same setup (``names`` for messages)."""
    names = names or [f"history run {i + 1}" for i in range(len(history))]
    warnings = []
    anchor = _anchor(cand)
    why_not = {name: incomparable(res, cand) + untrustworthy(res) for name, res in zip(names, history)}
    if metric == "speedup":
        for name, res in zip(names, history):
            if _anchor(res) != anchor:
                why_not[name].append(f"its baseline method is {_anchor(res)!r}, the candidate's {anchor!r}")
    # one line a file, its reasons together: a history of many runs of another setup is many lines, not
    # many lines a run
    reasons = [f"candidate: {'; '.join(whys)}" for whys in [untrustworthy(cand)] if whys]
    reasons += [f"{name}: {'; '.join(whys)}" for name, whys in why_not.items() if whys]
    if reasons:
        return GateReport("INCOMPARABLE", [], reasons, warnings, metric, threshold, CROSS_RUN)
    if len(history) < MIN_HISTORY:
        warnings.append(f"the history holds {len(history)} run(s), fewer than {MIN_HISTORY}: the run-to-run spread "
                        "is poorly known, so verdicts are unreliable; add runs of this setup with --update-baseline "
                        f"(until the history holds {MIN_HISTORY} runs it takes any comparable run)")
    if metric == "latency":
        warnings.append("latency compares absolute times across runs: another machine of the same model can differ "
                        "by 1-2%; --metric speedup compares each run against its own baseline method")
    def rows_of(res: Result) -> list[str]:
        if metric == "latency":
            return list(res.summaries)
        return [sp.candidate for sp in res.speedups if sp.baseline == _anchor(res)]

    labels = list(dict.fromkeys(rows_of(cand) + [x for res in history for x in rows_of(res)]))
    rows = []
    for label in labels:
        now = _statistic(cand, label, metric)
        then = [_statistic(res, label, metric) for res in history]
        missing = [name for name, t in zip(names, then) if t is None]
        if now is None or missing:
            where = "the candidate" if now is None else ", ".join(missing)
            rows.append(GateRow(label, "INCOMPARABLE", None, None, None, note=f"no estimate in {where}"))
            continue
        hist = np.array([t[0] for t in then])
        plain = float(np.exp(np.mean(np.log([t[2] for t in then]))))
        unsized = ["the candidate"] * bool(now[1] <= 0)
        unsized += [n for n, t in zip(names, then) if t[1] <= 0 and len(then) < 2]  # else the spread sizes it
        if unsized:  # an error taken as zero would make any difference look certain
            iv = Interval(math.exp(now[0] - float(np.mean(hist))), None, None, level,
                          CROSS_RUN if len(hist) >= 2 else ONE_RUN, len(hist),
                          note=f"no within-run interval in {', '.join(unsized)} (too few rounds, or a ratio the "
                          "timer cannot resolve): run it with more rounds or --precision")
            mde = None
        else:
            iv, mde = prediction_ratio(hist, np.array([t[1] for t in then]), now[0], now[1], level, threshold)
        cfg_note = ""
        cand_rec = next((m for m in cand.methods if m.label == label), None)
        base_rec = next((m for m in history[-1].methods if m.label == label), None)
        if cand_rec and base_rec:
            cfg_note = config_difference(base_rec.config, cand_rec.config)
        rows.append(GateRow(label, verdict(iv, threshold), iv, plain, now[2], mde, cfg_note))
    rows = _as_family(rows, threshold, level)
    return GateReport(overall(rows), rows, [], warnings, metric, threshold, CROSS_RUN if len(history) >= 2 else ONE_RUN)


def _as_family(rows: list[GateRow], threshold: float, level: float) -> list[GateRow]:
    """Rows with their verdicts judged together (Holm across rows that have an interval)."""
    judged = [i for i, r in enumerate(rows) if r.ratio is not None]
    verdicts = family_verdicts([rows[i].ratio for i in judged], threshold, level)
    out = list(rows)
    for i, v in zip(judged, verdicts):
        out[i] = dataclasses.replace(rows[i], verdict=v)
    return out


def same_run_gate(result: Result, pairs: list[tuple[str, str]], threshold: float = 0.03,
                  level: float = 0.95) -> GateReport:
    """Verdicts from one run's paired intervals: ``pairs`` of (then label, now label)."""
    rows = []
    for then, now in pairs:
        sp = result.speedup_record(now, then)  # then / now latency
        iv = sp.interval
        ratio = Interval(1 / iv.estimate, 1 / iv.high if iv.has_interval else None,
                         1 / iv.low if iv.has_interval else None, iv.level, iv.method, iv.n, iv.coverage, iv.note,
                         iv.df, iv.left_out, iv.lag1)
        rows.append(GateRow(now, verdict(ratio, threshold), ratio, result.summaries[then].median_us.estimate,
                            result.summaries[now].median_us.estimate, note=f"against {then}"))
    rows = _as_family(rows, threshold, level)
    return GateReport(overall(rows), rows, [], [], "latency", threshold, SAME_RUN)


# ---------------------------------------------------------------- history files


def load_history(paths: list[str | Path]) -> tuple[list[Result], list[str]]:
    """Results from files and folders (every ``*.json`` Result in a folder), oldest first."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.glob("*.json") if not f.name.startswith("latest"))
            if not found:
                raise GateInputError(f"baseline history folder {p} holds no Result (*.json): add one with "
                                     "kprof gate --baseline DIR --candidate RUN --update-baseline")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            why = "is not a regular file (a device, pipe or socket)" if p.exists() else "does not exist"
            raise GateInputError(f"baseline {p} {why}: pass a Result file or a history folder")
    results = [(load_gateable(f, "history run"), str(f)) for f in files]
    results.sort(key=lambda pair: pair[0].created)  # oldest first: the last is the latest run
    return [r for r, _ in results], [name for _, name in results]


def run_identity(run: Result | dict) -> tuple:
    """What makes two Result files the same run: its creation time, observations and revision."""
    keys = ("created", "observations_sha256", "git_revision")
    return tuple(run.get(k) for k in keys) if isinstance(run, dict) else tuple(getattr(run, k) for k in keys)


def already_in_history(candidate_path: Path, history_dir: Path) -> Path | None:
    """The history file that holds this very run (the same creation time and observations), if
    any: a run added twice would count as two runs that agree exactly."""
    if not history_dir.is_dir():
        return None
    mine = run_identity(json.loads(candidate_path.read_text()))
    for f in sorted(f for f in history_dir.glob("*.json") if not f.name.startswith("latest")):
        try:
            if run_identity(json.loads(f.read_text())) == mine:
                return f
        except (OSError, ValueError, AttributeError):
            continue  # the gate itself names unreadable history files
    return None


def add_to_history(candidate_path: Path, history_dir: Path) -> Path:
    """Copy the candidate Result (and its sidecar) into the history folder, atomically, sidecar
    first, under a name that no earlier run has."""
    history_dir.mkdir(parents=True, exist_ok=True)
    stem, k = candidate_path.stem, 1
    target = history_dir / f"{stem}.json"
    while target.exists():
        k += 1
        target = history_dir / f"{stem}-{k}.json"
    sidecar = candidate_path.with_suffix(".obs.npz")
    doc = json.loads(candidate_path.read_text())
    if sidecar.exists():
        with atomic_path(target.with_suffix(".obs.npz")) as tmp:
            shutil.copyfile(sidecar, tmp)
        doc["observations_file"] = target.with_suffix(".obs.npz").name
    with atomic_path(target) as tmp:
        tmp.write_text(json.dumps(doc, indent=2))
    return target


def value_unit(metric: str) -> str:
    """The unit of a gate row's then and now values."""
    return "us" if metric == "latency" else "speedup"


def format_value(v: float, metric: str) -> str:
    """A latency in microseconds with thousands separators (3,228,000), or a speedup (1.4523x)."""
    if metric != "latency":
        return f"{v:.4f}x"
    return f"{v:,.2f}" if v < 1000 else f"{v:,.0f}"


def summary_markdown(report: GateReport) -> str:
    lines = [f"### kprof gate: **{report.verdict}** ({report.metric}, threshold {report.threshold:.1%})", "",
             f"Intervals: {report.method}.", ""]
    if report.reasons:
        return "\n".join(lines + [f"- {r}" for r in report.reasons]) + "\n"
    unit = value_unit(report.metric)
    lines += [f"| method | then ({unit}) | now ({unit}) | ratio (now/then) | 95% interval | verdict | detectable | "
              "note |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report.rows:
        if r.ratio is None:
            lines.append(f"| {r.method} | | | | | {r.verdict} | | {r.note} |")
            continue
        ci = f"[{r.ratio.low:.4f}, {r.ratio.high:.4f}]" if r.ratio.has_interval else r.ratio.note
        mde = f"{r.mde:.1%}" if r.mde is not None else ""
        lines.append(f"| {r.method} | {format_value(r.baseline_value, report.metric)} | "
                     f"{format_value(r.candidate_value, report.metric)} | {r.ratio.estimate:.4f} | {ci} | {r.verdict} "
                     f"| {mde} | {r.note} |")
    lines += [""] + [f"- warning: {w}" for w in report.warnings]
    return "\n".join(lines) + "\n"
