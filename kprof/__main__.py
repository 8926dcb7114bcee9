"""``python -m kprof`` is the ``kprof`` command."""

from kprof.cli.main import main

main()
