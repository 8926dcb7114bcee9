"""One parser for every percentage a user writes: what it reads, and what it refuses."""

import pytest

from kprof.commands.percent import parse_percent
from kprof.core.errors import UsageError


@pytest.mark.parametrize("text, value", [("3%", 0.03), ("0.03", 0.03), (" 0.5% ", 0.005), (0.2, 0.2)])
def test_a_percentage_or_a_fraction_reads_as_a_fraction(text, value):
    assert parse_percent(text) == pytest.approx(value)


@pytest.mark.parametrize("text, message", [("abc", "'abc' is not a percentage"), ("nan", "is not a percentage"),
                                           (True, "is not a percentage"), ("3", "'3' is 300%; it must be above 0"),
                                           ("0", "is 0%"), ("-5%", "is -5%"), ("50%", "is 50%")])
def test_what_is_not_a_usable_percentage_says_what_it_read(text, message):
    with pytest.raises(UsageError, match=message):
        parse_percent(text)
