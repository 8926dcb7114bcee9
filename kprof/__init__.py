"""kprof: profiling and autotuning toolkit for sparse decode attention."""

from kprof.core.errors import KprofError  # the one error users catch
from kprof.core.version import VERSION as __version__

__all__ = ["KprofError", "Result", "__version__", "compare", "load_result", "time", "tune", "tunable"]

_API = {"compare", "time", "tune", "load_result"}


def __getattr__(name: str):
    """The Python API (``kprof.compare`` and friends), imported on first use so that ``import kprof``
    and ``kprof --help`` stay free of torch."""
    if name in _API:
        from kprof import api

        return getattr(api, name)
    if name == "tunable":
        from kprof.methods.tunable import tunable

        return tunable
    if name == "Result":
        from kprof.results.schema import Result

        return Result
    raise AttributeError(f"module 'kprof' has no attribute {name!r}")
