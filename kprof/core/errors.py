"""User-facing errors.

Every failure a user can cause is a :class:`KprofError` whose message is one line naming the
problem and the fix. The CLI prints it without a traceback and exits with its ``exit_code``:
1 for a failure while running, 2 when what was typed is wrong (:class:`UsageError`), 3 when a
method's output failed validation (:class:`InvalidOutput`).
"""


class KprofError(Exception):
    """A problem the user can fix; ``str(err)`` is a one-line message with the fix."""

    exit_code = 1


class UsageError(KprofError):
    """A name, option, number or path on the command line (or an API argument) is wrong; it is
    found before anything is loaded, so nothing ran (exit 2, as click's own usage errors)."""

    exit_code = 2


class WorkloadError(KprofError):
    """A workload file or spec is missing, malformed or inconsistent."""


class MethodUnavailable(KprofError):
    """A method cannot run on this machine (e.g. a CUDA-only SDPA backend on the CPU)."""


class ConfigError(UsageError):
    """A launch configuration names an unknown launch/key or an illegal value."""


class InvalidOutput(KprofError):
    """A method's output failed validation, so it was not timed (exit 3, as a failed check);
    ``problem`` is the row and its error alone; ``kept`` is what a sweep had timed on earlier
    workloads (a partial Result), for the caller to save."""

    exit_code = 3

    def __init__(self, message: str, kept: object | None = None, problem: str = ""):
        super().__init__(message)
        self.kept, self.problem = kept, problem or message


def run_reporting_errors(main) -> None:
    """Run a script's ``main`` as the CLI runs a command: a :class:`KprofError` ends it with its
    one-line message and exit code, not a traceback (the probes under ``scripts/``)."""
    import sys

    try:
        main()
    except KprofError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
