"""A user's module or function failing: one line naming the user's file and line, never kprof's
traceback; kprof's own code keeps its traceback (a bug to report)."""

import pytest

from kprof.core.errors import UsageError
from kprof.methods.user_code import UserCodeError, is_users, running_users_code


def test_a_syntax_error_in_the_users_module_is_one_usage_line(tmp_path, monkeypatch):
    from kprof.methods.registry import load_object, load_plugins

    (tmp_path / "typo_mod.py").write_text("def f(q, k, v):\n    return q +\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError, match=r"module .typo_mod.: importing it raised SyntaxError: .* \(.*typo_mod.py:2\)"):
        load_object("typo_mod:f")
    monkeypatch.setenv("KPROF_PLUGINS", "typo_mod")
    with pytest.raises(UsageError, match=r"KPROF_PLUGINS typo_mod: importing it raised SyntaxError"):
        load_plugins()


def test_the_users_frame_is_named_and_kprofs_own_code_is_not_wrapped():
    def users_kernel():
        raise ValueError("bad block size\nsecond line")

    with pytest.raises(UserCodeError, match=r"^mine raised ValueError: bad block size \(.*test_user_code.py:\d+ in "
                                            r"users_kernel\): fix it"):
        with running_users_code("mine"):
            users_kernel()
    with pytest.raises(UserCodeError, match=r"called sys.exit\(3\)"):
        with running_users_code("mine"):
            raise SystemExit(3)
    from kprof.methods import get_method

    assert not is_users(get_method("triton-dense")) and is_users(users_kernel)


def test_a_failure_inside_a_library_the_user_called_names_the_users_line():
    import json

    def users_kernel():
        return json.loads("not json")  # raises deep inside the standard library

    with pytest.raises(UserCodeError, match=r"raised JSONDecodeError: .* \(.*test_user_code.py:\d+ in users_kernel\)"):
        with running_users_code("mine"):
            users_kernel()
