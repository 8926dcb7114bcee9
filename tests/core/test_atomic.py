import pytest

from kprof.core.atomic import atomic_path, atomic_write_text


def test_crash_inside_the_block_keeps_the_old_file(tmp_path):
    target = tmp_path / "result.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half-writ")
            raise RuntimeError("simulated crash")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_success_replaces_the_file(tmp_path):
    target = tmp_path / "sub" / "result.json"
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
