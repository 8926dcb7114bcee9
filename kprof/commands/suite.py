"""Benchmark suites: a TOML file of kprof commands (and other programs) run in order, one log
each, in one folder.

A suite replaces hand-written GPU check scripts: the same file runs the project's H200 checks
(``profiles/suites/h200.toml``) and a user's own. Each step is a fresh process with a time
limit; a failing or hung step is recorded and the suite goes on. ``suite.json`` in the output
folder is rewritten atomically after every step, so ``--resume`` skips the steps that passed.

::

    [suite]
    description = "what this suite checks"
    timeout_s = 300                      # default limit of a step

    [[step]]
    name = "compare"                     # the log is OUT/compare.log
    kprof = ["compare", "--baseline", "flash", "--out", "{out}/compare.json"]
    requires = "gpu"                     # skipped, and said so, without CUDA

    [[step]]
    name = "gpu-tests"
    run = ["{python}", "-m", "pytest", "-m", "gpu", "-q", "tests"]
    timeout_s = 600
    ok_exit = [0]                        # exit codes that count as passing
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from kprof.core.atomic import atomic_write_text
from kprof.core.errors import UsageError

SUMMARY = "suite.json"
_STEP_KEYS = {"name", "kprof", "run", "timeout_s", "requires", "ok_exit", "env"}


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    timeout_s: float
    requires_gpu: bool = False
    ok_exit: tuple[int, ...] = (0,)
    env: dict = field(default_factory=dict)


@dataclass
class StepOutcome:
    name: str
    command: str
    status: str  # "passed" | "failed" | "timeout" | "skipped"
    exit_code: int | None
    seconds: float
    log: str
    note: str = ""


@dataclass
class Suite:
    path: Path
    description: str
    steps: list[Step]


def _seconds(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise UsageError(f"{where}: timeout_s = {value!r}: write a positive number of seconds, e.g. timeout_s = 300")
    return float(value)


def load_suite(path: str | Path, kprof_commands: set[str] | None = None) -> Suite:
    """Read and check a suite file; every mistake is one line naming the step and the fix (exit 2:
    nothing ran). ``kprof_commands``: the command names a ``kprof = [...]`` step may start with."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"suite file {path} does not exist: pass a TOML suite file (see profiles/suites/)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"suite file {path} is not valid TOML ({exc}): fix the file") from None
    head = doc.get("suite", {})
    if not isinstance(head, dict):
        raise UsageError(f"{path.name}: suite = {head!r} is not a table: write [suite] with description and timeout_s")
    default_timeout = _seconds(head.get("timeout_s", 300), f"{path.name}, [suite]")
    raw_steps = doc.get("step", [])
    if not isinstance(raw_steps, list):
        raise UsageError(f"{path.name}: step = {raw_steps!r} is not a list of tables: write each step as [[step]]")
    steps, names = [], set()
    for i, raw in enumerate(raw_steps, start=1):
        where = f"{path.name}, step {i}"
        if not isinstance(raw, dict):
            raise UsageError(f"{where} is not a table: write [[step]] with name and kprof or run")
        unknown = set(raw) - _STEP_KEYS
        if unknown:
            raise UsageError(f"{where} has unknown keys {', '.join(sorted(unknown))}: "
                             f"use {', '.join(sorted(_STEP_KEYS))}")
        name = raw.get("name")
        if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
            raise UsageError(f"{where} needs a name of letters, digits, '-', '_' or '.' (its log file's name)")
        if name in names:
            raise UsageError(f"{where}: the name {name!r} is used twice: names must be unique")
        names.add(name)
        where = f"{where} ({name})"
        if ("kprof" in raw) == ("run" in raw):
            raise UsageError(f"{where} needs exactly one of kprof = [...] or run = [...]")
        argv = raw.get("kprof") or raw.get("run")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, (str, int, float)) for a in argv):
            raise UsageError(f"{where}: the command must be a non-empty list of strings")
        argv = [str(a) for a in argv]
        if "kprof" in raw:
            if kprof_commands is not None and argv[0] not in kprof_commands:
                raise UsageError(f"{where}: kprof has no command {argv[0]!r}: start with one of "
                                 f"{', '.join(sorted(kprof_commands))}")
            argv = ["{python}", "-m", "kprof", *argv]
        requires = raw.get("requires")
        if requires not in (None, "gpu"):
            raise UsageError(f"{where}: requires = {requires!r}: the only requirement is \"gpu\"")
        ok_exit = raw.get("ok_exit", [0])
        if not isinstance(ok_exit, list) or not all(isinstance(x, int) for x in ok_exit):
            raise UsageError(f"{where}: ok_exit must be a list of exit codes, e.g. [0, 1]")
        env = raw.get("env") or {}
        if not isinstance(env, dict):
            raise UsageError(f"{where}: env = {env!r} is not a table: write env = {{ NAME = \"value\" }}")
        timeout = _seconds(raw["timeout_s"], where) if "timeout_s" in raw else default_timeout
        steps.append(Step(name, tuple(argv), timeout, requires == "gpu", tuple(ok_exit),
                          {str(k): str(v) for k, v in env.items()}))
    if not steps:
        raise UsageError(f"suite file {path} has no [[step]]: add at least one")
    return Suite(path, str(head.get("description", "")), steps)


def _expand(argv: tuple[str, ...], out: Path) -> list[str]:
    return [a.replace("{out}", str(out)).replace("{python}", sys.executable) for a in argv]


def _previous(out: Path) -> dict[str, dict]:
    try:
        return {s["name"]: s for s in json.loads((out / SUMMARY).read_text())["steps"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def run_suite(suite: Suite, out: Path, *, has_gpu: bool | None = None, only: set[str] | None = None,
              resume: bool = False, say: Callable[[str], None] = print, env: dict | None = None) -> list[StepOutcome]:
    """Run the suite's steps into ``out``; the summary is on disk after every step. GPU steps are
    skipped where ``has_gpu`` is false (None: whether this machine has a CUDA GPU)."""
    if has_gpu is None:
        from kprof.core.target import cuda_available

        has_gpu = cuda_available()
    out.mkdir(parents=True, exist_ok=True)
    done = _previous(out) if resume else {}
    outcomes: list[StepOutcome] = []
    selected = [s for s in suite.steps if not only or s.name in only]
    if only and (missing := only - {s.name for s in suite.steps}):
        raise UsageError(f"--only names steps the suite does not have: {', '.join(sorted(missing))}: "
                         "`kprof suite FILE --list` names them")
    for k, step in enumerate(selected, start=1):
        argv = _expand(step.argv, out)
        command = shlex.join(argv)
        log = out / f"{step.name}.log"
        if resume and done.get(step.name, {}).get("status") == "passed":
            outcomes.append(StepOutcome(**done[step.name]))
            say(f"[{k}/{len(selected)}] {step.name}: passed before, skipped (--resume)")
            continue
        if step.requires_gpu and not has_gpu:
            outcomes.append(StepOutcome(step.name, command, "skipped", None, 0.0, str(log), "needs a GPU"))
            say(f"[{k}/{len(selected)}] {step.name}: skipped (needs a GPU)")
            _write_summary(suite, out, outcomes)
            continue
        say(f"[{k}/{len(selected)}] {step.name}: {command}")
        t0 = time.monotonic()
        with open(log, "w") as fh:
            try:
                proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=step.timeout_s,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {}), **step.env})
                code = proc.returncode
                status = "passed" if code in step.ok_exit else "failed"
            except subprocess.TimeoutExpired:
                code, status = None, "timeout"
            except OSError as exc:
                fh.write(f"could not start: {exc}\n")
                code, status = None, "failed"
        seconds = time.monotonic() - t0
        note = f"after {step.timeout_s:.0f} s" if status == "timeout" else ""
        outcomes.append(StepOutcome(step.name, command, status, code, round(seconds, 1), str(log), note))
        say(f"[{k}/{len(selected)}] {step.name}: {status}" + (f" (exit {code})" if code is not None else "")
            + f" in {seconds:.0f} s")
        _write_summary(suite, out, outcomes)
    return outcomes


def _write_summary(suite: Suite, out: Path, outcomes: list[StepOutcome]) -> None:
    doc = {"suite": str(suite.path), "description": suite.description, "steps": [asdict(o) for o in outcomes]}
    atomic_write_text(out / SUMMARY, json.dumps(doc, indent=2))
