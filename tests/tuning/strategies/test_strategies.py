"""Strategies are found from their modules: the folder is the registry."""

from pathlib import Path

import pytest

import kprof.tuning.strategies as strategies
from kprof.core.errors import KprofError
from kprof.tuning.search import STRATEGIES


def test_every_module_of_the_folder_is_a_strategy_with_one_entry_point():
    folder = Path(strategies.__file__).parent
    assert set(STRATEGIES) == {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert set(STRATEGIES) == {"exhaustive", "random", "halving", "optuna"}  # kprof tune --strategy
    for name in STRATEGIES:
        module = strategies.strategy(name)
        assert callable(module.tune) and isinstance(module.SAMPLES, bool), name


def test_an_unknown_strategy_is_refused_with_the_known_ones():
    with pytest.raises(KprofError, match="unknown strategy 'grid': use exhaustive, halving, optuna, random"):
        strategies.strategy("grid")
