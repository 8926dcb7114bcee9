"""The ``kprof`` command line (click + rich); one module per command family."""
