"""Every committed tuned profile is keyed to today's kernels, so a fresh clone uses it.

A profile whose launch's jit code changed since it was measured is not used (``kprof compare``
says "measured on another setup ... defaults used"); this test names it and the command that
re-tunes it. Keys are computed as a GPU computes them: compiled, not interpreted (a kernel may
read a constexpr the interpreter sets otherwise, e.g. ``kernels/common/matmul.py``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kprof.tuning.cache import shape_bucket
from kprof.workloads.specs import SPECS

TUNED = Path(__file__).resolve().parents[2] / "profiles" / "tuned"
PROFILES = sorted(TUNED.glob("*.json"))
INTERPRETER = "cpu-interpreter"

SOURCES = """
import json, sys
from kprof.methods import get_method
from kprof.tuning.source_key import source_hash
print(json.dumps([source_hash(get_method(method), launch) for method, launch in json.loads(sys.argv[1])]))
"""


def _key(path: Path) -> dict:
    return json.loads(path.read_text())["key"]


def current_sources(keys: list[dict], interpreted: bool) -> list[str]:
    """Today's source hash of each key's (method, launch), in a process of its own whose kernels
    are interpreted or compiled as the key's device had them."""
    env = {**os.environ, "TRITON_INTERPRET": "1" if interpreted else "0"}
    done = subprocess.run([sys.executable, "-c", SOURCES, json.dumps([[k["method"], k["launch"]] for k in keys])],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def today() -> dict[str, str]:
    out = {}
    for interpreted in (False, True):
        paths = [p for p in PROFILES if (_key(p)["device"] == INTERPRETER) == interpreted]
        if paths:
            out.update(zip((p.name for p in paths), current_sources([_key(p) for p in paths], interpreted)))
    return out


def retune_command(key: dict) -> str:
    workload = next((name for name, spec in SPECS.items() if shape_bucket(spec.shape) == key["bucket"]),
                    f"<a workload of bucket {key['bucket']}>")
    return (f"kprof tune --method {key['method']} --launch {key['launch']} --workload {workload} --replace-stale "
            f"(on {key['device']}), then commit profiles/tuned/ (or delete the file)")


def test_profiles_are_committed():
    assert PROFILES, "profiles/tuned holds no profile: this test would check nothing"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_a_committed_profile_is_keyed_to_todays_kernels(path, today):
    key = _key(path)
    assert key["source"] == today[path.name], (
        f"{path.name} was tuned on kernel code that has changed since (key source {key['source']}, today's "
        f"{today[path.name]}): re-tune with `{retune_command(key)}`")


def test_no_set_aside_profile_is_committed():
    """``--replace-stale`` keeps the old file as ``*.stale.json`` beside the new one: git ignores it."""
    def git(*args):
        return subprocess.run(["git", "-C", str(TUNED), *args], capture_output=True, text=True)

    try:
        if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
            pytest.skip("not a git checkout")
    except FileNotFoundError:
        pytest.skip("no git here")
    present = [p.name for p in TUNED.glob("*.stale*.json")]  # a tracked file is never ignored
    for name in ["a__b__c__d.stale.json", "a__b__c__d.stale-2.json", *present]:
        assert git("check-ignore", "-q", name).returncode == 0, f"git would commit profiles/tuned/{name}"
