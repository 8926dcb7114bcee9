"""Autotuning: cache keys and files, lookup of tuned configs, search strategies, the worker process.

:func:`load_config` gives user code the launch parameters kprof chose (``kprof tune --export``).
"""


def load_config(method, launch, shape, path=None, device=None) -> dict:
    """See :func:`kprof.tuning.export.load_config` (imported on use: the package face stays light)."""
    from kprof.tuning.export import load_config as load

    return load(method, launch, shape, path, device)
