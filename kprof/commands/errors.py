"""The errors commands raise, for the CLI to turn into one line and an exit code.

Deliberate re-exports of :mod:`kprof.core.errors`: the CLI imports ``kprof.commands`` only.
"""

from kprof.core.errors import ConfigError, InvalidOutput, KprofError, UsageError

__all__ = ["ConfigError", "InvalidOutput", "KprofError", "UsageError"]
