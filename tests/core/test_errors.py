"""Scripts end on a kprof error as the CLI does: one line and the error's exit code."""

import pytest

from kprof.core.errors import ConfigError, InvalidOutput, run_reporting_errors


@pytest.mark.parametrize("error, code", [(ConfigError("bad key x: use y"), 2), (InvalidOutput("wrong: fix it"), 3)])
def test_a_kprof_error_is_one_line_and_its_exit_code(capsys, error, code):
    def main():
        raise error

    with pytest.raises(SystemExit) as exit_:
        run_reporting_errors(main)
    assert exit_.value.code == code
    assert capsys.readouterr().err == f"error: {error}\n"


def test_other_errors_and_success_pass_through():
    ran = []
    run_reporting_errors(lambda: ran.append(1))
    assert ran == [1]
    with pytest.raises(ZeroDivisionError):
        run_reporting_errors(lambda: 1 / 0)
