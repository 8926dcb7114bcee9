"""The timing-protocol presets commands time under, named where ``--help`` explains an option and
where the API checks its arguments (deliberate re-exports: the CLI and the API import
``kprof.commands`` only)."""

from kprof.measure.protocol import CPU_EMBEDDED, EVICTION_MODES, GPU_DEFAULT, default_protocol

__all__ = ["CPU_EMBEDDED", "EVICTION_MODES", "GPU_DEFAULT", "default_protocol"]
