"""Where ``kprof.cli.tune_cmd`` imports ``check_available`` from: :mod:`kprof.tuning.strategies.optuna`."""

from kprof.tuning.strategies.optuna import DEFAULT_TRIALS, check_available, screen_with_optuna  # noqa: F401
