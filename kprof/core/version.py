"""kprof's own version, as installed (recorded in every Result's environment)."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

try:
    VERSION = _dist_version("kprof")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0.0.0+source"
