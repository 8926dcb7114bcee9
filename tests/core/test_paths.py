"""Where runs and tuned profiles go: flag, then $KPROF_HOME, then the project root, else the cache."""

from kprof.core.paths import kprof_home, project_root, runs_dir, tuned_dir


def test_resolution_order(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "sub" / "deeper").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.delenv("KPROF_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(project / "sub" / "deeper")
    assert project_root() == project.resolve()
    assert runs_dir() == project.resolve() / "runs" and tuned_dir() == project.resolve() / "profiles" / "tuned"
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    assert kprof_home() == tmp_path / "home" and runs_dir() == tmp_path / "home" / "runs"
    monkeypatch.delenv("KPROF_HOME")
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    if project_root() is None:  # no marker above the temporary folder
        assert kprof_home() == tmp_path / "cache" / "kprof"


def test_compare_from_a_subfolder_writes_into_the_project_runs(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from kprof.cli.main import cli

    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / ".git").mkdir()
    monkeypatch.delenv("KPROF_HOME", raising=False)
    monkeypatch.chdir(project / "sub")
    r = CliRunner().invoke(cli, ["compare", "--method", "math", "--baseline", "math", "--rounds", "2",
                                 "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"])
    assert r.exit_code == 0, r.output
    assert (project / "runs" / "latest.json").exists() and not (project / "sub" / "runs").exists()


def test_machine_measurements_go_to_the_machine_not_the_project(tmp_path, monkeypatch):
    from kprof.core.paths import measured_dir, measured_files

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    monkeypatch.chdir(project)
    monkeypatch.delenv("KPROF_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert measured_dir() == tmp_path / "cache" / "kprof" / "measured"
    assert measured_files("p.json") == [measured_dir() / "p.json", project.resolve() / "profiles" / "p.json"]
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    assert measured_dir() == tmp_path / "home" / "measured"


def test_a_kprof_home_that_is_a_file_is_one_usage_error(tmp_path, monkeypatch):
    import pytest

    from kprof.core.errors import UsageError

    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "afile"))
    with pytest.raises(UsageError, match="is a file: point it at a folder"):
        kprof_home()
