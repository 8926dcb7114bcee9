"""The consoles' width: what $COLUMNS asks for, never so narrow that messages vanish."""

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("columns", ["0", "1", "20"])
def test_a_tiny_or_zero_columns_still_shows_the_error_line(columns):
    env = {**os.environ, "COLUMNS": columns}
    r = subprocess.run([sys.executable, "-m", "kprof", "compare", "--method", "nosuch"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown method 'nosuch'" in r.stderr + r.stdout, (r.stdout, r.stderr)


def test_the_width_follows_columns_down_to_a_floor(monkeypatch):
    from kprof.cli import console

    monkeypatch.setenv("COLUMNS", "100")
    assert console._width(sys.stdout) == 100
    monkeypatch.setenv("COLUMNS", "0")
    assert console._width(sys.stdout) == console._MIN_WIDTH
    monkeypatch.delenv("COLUMNS")
    with open(os.devnull, "w") as pipe:
        assert console._width(pipe) == console._PIPE_WIDTH  # not a terminal: CI logs, pipes
