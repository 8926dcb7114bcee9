"""Percentages as users write them (``3%``, ``0.03``): one parser and one message for every
option and argument that takes one (``--precision``, ``--max-regression``, ``max_regression=``)."""

from __future__ import annotations

import math

from kprof.core.errors import UsageError


def parse_percent(text, example: str = "3%") -> float:
    """``text`` as a fraction in (0, 0.5); a one-line UsageError naming what was read otherwise."""
    try:
        value = math.nan if isinstance(text, bool) else float(str(text).strip().rstrip("%")) / (
            100 if str(text).strip().endswith("%") else 1)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise UsageError(f"{text!r} is not a percentage: write e.g. {example}")
    if not 0 < value < 0.5:
        raise UsageError(f"{text!r} is {100 * value:g}%; it must be above 0 and below 50%: write e.g. {example}")
    return value
