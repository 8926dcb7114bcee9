"""kprof: profiling and autotuning toolkit for sparse decode attention."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

try:
    __version__ = _dist_version("kprof")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

from kprof.core.errors import KprofError  # noqa: E402  (re-export: the one error users catch)

__all__ = ["KprofError", "__version__"]
