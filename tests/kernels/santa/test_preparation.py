"""Packing and the team-layout cache."""

import pytest
import torch

from kprof.core.errors import ConfigError
from kprof.kernels.santa.cache import cache_path, load_or_build
from kprof.kernels.santa.preparation import SantaSettings, TeamLayout, build_layout, pack
from kprof.workloads import load, save


@pytest.fixture
def workload_file(tmp_path, make_workload):
    w = make_workload(8, 2, 200, 16, seed=4)
    path = tmp_path / "w.safetensors"
    save(w, path)
    return path


def test_packing_is_team_major_and_leaves_the_cache_untouched(make_workload):
    w = make_workload(8, 2, 200, 16, seed=1)
    k_before, v_before = w.k.clone(), w.v.clone()
    settings = SantaSettings(parents="contiguous")
    layout = build_layout(w.k, settings)
    arts = pack(w.k, w.v, layout)
    assert torch.equal(w.k, k_before) and torch.equal(w.v, v_before)
    for h, teams in enumerate(layout.teams()):
        for g, members in enumerate(teams.members):
            s, n = int(layout.start[h, g]), int(layout.length[h, g])
            assert torch.equal(arts.packed_k[h, s : s + n], w.k[h, members])
            assert torch.equal(arts.packed_v[h, s : s + n], w.v[h, members])
            assert torch.equal(arts.rep_keys[h, g], w.k[h, teams.representatives[g]])
    mem = arts.memory()
    assert mem["packed_kv"] == 2 * 2 * 200 * 16 * 4
    teams = int(layout.num_teams.sum())
    assert mem["representatives"] == teams * 16 * 4 and mem["starts_lengths"] == teams * 8


def test_layout_round_trips_teams_and_validates(make_workload):
    w = make_workload(4, 2, 150, 8, seed=2)
    layout = build_layout(w.k, SantaSettings(parents="kmeans"))
    layout.check(150)
    again = TeamLayout.from_teams(layout.teams())
    for name in ("perm", "start", "length", "rep_index", "num_teams"):
        assert torch.equal(getattr(again, name), getattr(layout, name))
    broken = TeamLayout(layout.perm.clone(), layout.start, layout.length, layout.rep_index, layout.num_teams)
    broken.perm[0, 0] = broken.perm[0, 1]
    with pytest.raises(ValueError, match="not a permutation"):
        broken.check(150)


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="not divisible by R"):
        SantaSettings(p=16, r=3)
    with pytest.raises(ConfigError, match="not divisible by P/R"):
        SantaSettings(s=125)
    with pytest.raises(ConfigError, match="parent policy"):
        SantaSettings(parents="random")


def test_cache_hit_stale_and_corrupt(workload_file):
    w = load(workload_file)
    s = SantaSettings(parents="kmeans")
    layout, first = load_or_build(w, s)
    assert first.status == "built" and first.path.parent == workload_file.parent
    again, hit = load_or_build(w, s)
    assert hit.status == "hit"
    assert torch.equal(again.perm, layout.perm)
    # another seed is another key: another file, never the old one
    other = load_or_build(w, SantaSettings(parents="kmeans", seed=1))[1]
    assert other.path != first.path
    # corrupt file: rebuilt, never trusted
    first.path.write_bytes(b"\x00garbage")
    rebuilt, outcome = load_or_build(w, s)
    assert outcome.status.startswith("rebuilt") and torch.equal(rebuilt.perm, layout.perm)
    assert load_or_build(w, s)[1].status == "hit"


def test_cache_of_a_modified_workload_is_rebuilt(workload_file, tmp_path):
    w = load(workload_file)
    s = SantaSettings(parents="contiguous")
    _, first = load_or_build(w, s)
    w.k[0, 0, 0] += 1.0  # same file name, different content
    _, outcome = load_or_build(w, s)
    assert outcome.status.startswith("rebuilt") and "hash differs" in outcome.status


def test_spec_workloads_cache_under_kprof_cache(monkeypatch, tmp_path, make_workload):
    monkeypatch.setenv("KPROF_CACHE", str(tmp_path / "cache"))
    w = make_workload(4, 2, 64, 8)
    path = cache_path(w, SantaSettings(), w.content_hash())
    assert str(path).startswith(str(tmp_path / "cache"))


@pytest.mark.slow
def test_heads_built_in_worker_processes_match_the_sequential_layout(make_workload):
    w = make_workload(8, 2, 600, 16, seed=12, scale=2.0)
    settings = SantaSettings(p=8, r=2, s=8, parents="kmeans")
    one = build_layout(w.k, settings, workers=1)
    two = build_layout(w.k, settings, workers=2)
    assert not w.k.is_shared(), "the caller's keys stay where they were (sent as copies)"
    for name in ("perm", "start", "length", "rep_index", "num_teams"):
        assert torch.equal(getattr(one, name), getattr(two, name)), name
    two.check(600)


def test_worker_processes_only_for_large_kmeans_builds_outside_daemons(monkeypatch):
    import multiprocessing

    from kprof.kernels.santa.preparation import layout_workers

    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert layout_workers(8, 131_072, "kmeans") == 8
    assert layout_workers(8, 8_192, "kmeans") == 1 and layout_workers(8, 131_072, "contiguous") == 1
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    assert layout_workers(8, 131_072, "kmeans") == 1  # a tuning worker may not have children


@pytest.mark.slow
def test_worker_processes_send_teams_back_within_a_small_open_file_limit(tmp_path):
    """A head's teams once travelled back as one shared-memory file per team tensor: at 128K on
    an H200 that ran out of open files. Here a head has hundreds of teams and the worker
    processes may open at most 128 files."""
    import subprocess
    import sys

    script = tmp_path / "build.py"
    script.write_text(
        "import resource, torch\n"
        "from kprof.kernels.santa.preparation import SantaSettings, build_layout\n"
        "if __name__ == '__main__':\n"
        "    resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "    k = torch.randn(2, 2400, 16, generator=torch.Generator().manual_seed(3)).half()\n"
        "    one = build_layout(k, SantaSettings(p=8, r=2, s=8), workers=1)\n"
        "    two = build_layout(k, SantaSettings(p=8, r=2, s=8), workers=2)\n"
        "    assert int(two.num_teams.min()) > 128, two.num_teams\n"
        "    names = ('perm', 'start', 'length', 'rep_index')\n"
        "    assert all(torch.equal(getattr(one, n), getattr(two, n)) for n in names)\n"
        "    print('ok')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
