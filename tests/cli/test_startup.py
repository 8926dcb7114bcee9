"""Commands that only read or list answer at once: they load no torch (importing it alone takes
about a second). Each runs in a fresh interpreter, which then reports what it imported."""

import json
import subprocess
import sys

import pytest

from kprof.results.store import save_result
from tests.results.test_gate import synthetic

PROBE = """
import json
import sys
from kprof.cli.main import main
sys.argv = ["kprof", *{args!r}]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("\\nPROBE", json.dumps({{"code": code, "torch": "torch" in sys.modules}}), file=sys.stderr)
"""


def _probe(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=120)
    line = next(x for x in r.stderr.splitlines() if x.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


@pytest.fixture(scope="module")
def stored(real_result, tmp_path_factory):
    folder = tmp_path_factory.mktemp("stored")
    paths = [save_result(synthetic(real_result, seed=s), folder / f"r{s}.json") for s in range(4)]
    return [str(p) for p in paths]


@pytest.mark.parametrize("args", [
    ["--help"], ["compare", "--help"], ["tune", "--help"], ["gate", "--help"], ["ncu", "--help"],
    ["workload", "list"], ["workload", "info", "qwen2.5-7b-l14-32k"], ["workload", "info", "cpu-smoke", "--json"],
    ["methods"],
], ids=" ".join)
def test_reading_and_listing_load_no_torch(args):
    out = _probe(args)
    assert out == {"code": 0, "torch": False}


def test_report_and_gate_on_stored_results_load_no_torch(stored, tmp_path):
    assert _probe(["report", stored[0]]) == {"code": 0, "torch": False}
    assert _probe(["report", "--json", *stored[:2]]) == {"code": 0, "torch": False}
    history = tmp_path / "history"
    history.mkdir()
    for p in stored[:3]:
        (history / p.split("/")[-1]).write_text(open(p).read())
        sidecar = p.removesuffix(".json") + ".obs.npz"
        (history / sidecar.split("/")[-1]).write_bytes(open(sidecar, "rb").read())
    out = _probe(["gate", "--baseline", str(history), "--candidate", stored[3], "--json"])
    assert out["torch"] is False and out["code"] in (0, 3)


def test_the_probe_sees_torch_when_it_is_loaded():
    """The check above could not pass by accident: a command that measures does load torch."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(args=["env", "--no-ncu", "--json"])],
                         capture_output=True, text=True, timeout=120)
    assert json.loads(out.stdout)["torch"] and '"torch": true' in out.stderr
