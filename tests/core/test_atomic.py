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


def test_files_get_the_users_umask_not_a_temporary_files_0600(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.json", "x")
        os.umask(0o077)
        atomic_write_text(tmp_path / "b.json", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600


def _append_under_lock(folder: str, tag: str, n: int) -> None:
    from pathlib import Path

    from kprof.core.atomic import locked

    log = Path(folder) / "log.txt"
    for i in range(n):
        with locked(folder):
            text = log.read_text() if log.exists() else ""
            atomic_write_text(log, text + f"{tag}{i}\n")  # a read-modify-write that needs the lock


def test_the_folder_lock_serialises_read_modify_writes_across_processes(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_under_lock, args=(str(tmp_path), tag, 40)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = (tmp_path / "log.txt").read_text().split()
    assert sorted(lines) == sorted([f"{t}{i}" for t in "ab" for i in range(40)])  # none lost
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]  # the lock leaves nothing behind


def test_writable_probe_names_a_file_in_the_way_and_a_read_only_place(tmp_path):
    from kprof.core.atomic import writable_probe

    (tmp_path / "afile").write_text("x")
    assert writable_probe(tmp_path / "new" / "deeper") is None
    assert "afile is a file" in writable_probe(tmp_path / "afile" / "sub")
    assert "cannot write in /proc" in writable_probe("/proc/kprof-read-only")


def test_a_device_or_pipe_is_never_replaced(tmp_path):
    """``--out /dev/null --force`` once turned the device node into a regular file."""
    import os

    from kprof.core.atomic import destination_problem

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        with atomic_path(fifo) as tmp:
            tmp.write_text("new")
    assert not fifo.is_file() and fifo.exists() and list(tmp_path.iterdir()) == [fifo]
    assert "not a regular file" in destination_problem("/dev/null", True, "--out")
