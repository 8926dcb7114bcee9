"""DRAM bytes from ncu are kept per setup and read back for exactly that setup."""

import json

import pandas as pd

from kprof.commands.ncu import record_table_bytes
from kprof.ncu.measured_bytes import READ, WRITE, bytes_key, lookup_bytes, record_bytes


def test_bytes_are_kept_per_setup():
    key = bytes_key("NVIDIA H200", "abc", "santa", "src1", {"attend": {"BLOCK_N": 64}})
    assert lookup_bytes(key) is None
    record_bytes(key, 123_456)
    assert lookup_bytes(key) == 123_456
    assert lookup_bytes(bytes_key("NVIDIA H200", "abc", "santa", "src1", {"attend": {"BLOCK_N": 32}})) is None
    assert lookup_bytes(bytes_key("NVIDIA H100", "abc", "santa", "src1", {"attend": {"BLOCK_N": 64}})) is None
    assert lookup_bytes(bytes_key("NVIDIA H200", "abc", "santa", "src2", {"attend": {"BLOCK_N": 64}})) is None


def test_kprof_ncu_records_the_sum_over_launches(tmp_path):
    describe = tmp_path / "target.json"
    key = bytes_key("NVIDIA H200", "w", "flash", "src", {})
    describe.write_text(json.dumps({"key": key}))
    table = pd.DataFrame({"kernel": ["a", "b"], READ: [1000.0, 500.0], WRITE: [10.0, 5.0]})
    assert record_table_bytes(table, describe) == 1515
    assert lookup_bytes(key) == 1515


def test_a_session_on_a_gpu_reports_the_bytes_ncu_measured_for_its_setup():
    import dataclasses
    from types import SimpleNamespace

    from kprof.commands.session import MeasurementSession
    from kprof.methods import get_method
    from kprof.ncu.measured_bytes import SOURCE

    session = MeasurementSession.open("cpu", "cpu-smoke", {"rounds": 2})
    declared = session.prepare("math", "math", "baseline").record
    assert declared.bytes_source == "declared by the method"
    # as kprof ncu's target on an H200 would see it
    session.environment = dataclasses.replace(session.environment, gpu=SimpleNamespace(name="NVIDIA H200"))
    method = get_method("math")
    prepared = method.prepare(session.workload, session.target)
    record_bytes(session.measured_bytes_key(method, "math", prepared), 777)
    measured = session.prepare("math", "math", "baseline").record
    assert (measured.bytes_per_call, measured.bytes_source) == (777, SOURCE)
