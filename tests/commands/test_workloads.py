"""A workload described: a spec from its declaration alone, a spec's tensors only with statistics."""

import subprocess
import sys

from kprof.commands.workloads import describe


def test_a_spec_is_described_without_making_its_tensors():
    info = describe("qwen2.5-7b-l14-32k")
    assert info.shape.n == 32768 and info.shape.kv_bytes == 2 * 4 * 32768 * 128 * 2
    assert info.spec.model == "Qwen/Qwen2.5-7B-Instruct" and info.attention is None and info.content_hash is None
    doc = info.to_dict()
    assert doc["spec"]["layer"] == 14 and "attention" not in doc


def test_statistics_make_the_tensors_and_hash_them():
    info = describe("synthetic:hq=4,hkv=2,d=16,n=256,dtype=fp32", stats=True)
    assert info.content_hash and set(info.attention) == {"top1pct_mass", "top512_mass", "sink_mass", "effective_keys"}
    assert 0 < info.attention["top512_mass"]["mean"] <= 1 and len(info.heads) == 4


def test_describing_a_spec_loads_no_torch():
    code = ("import sys; from kprof.commands.workloads import describe; describe('cpu-smoke'); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
