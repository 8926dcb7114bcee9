"""SANTA++'s declared bytes per call: every representative, plus the K/V rows of the teams its
heads selected; with every team selected that is all of K and V."""

from kprof.methods import get_method


def test_all_teams_read_all_of_k_and_v_and_fewer_teams_read_less(make_workload, target):
    w = make_workload(4, 2, 160, 16, seed=3, scale=2.0)
    s, item = w.shape, w.dtype.itemsize
    full = get_method("santa:k=10000")
    p = full.prepare(w, target)
    p.run()
    reps = int(p.handle.arts.layout.num_teams.sum()) * s.d * p.handle.arts.rep_keys.element_size()
    assert full.bytes_per_call(w, p) == reps + s.kv_bytes + 2 * s.hq * s.d * item
    few = get_method("santa:k=3")
    q = few.prepare(w, target)
    q.run()
    teams, _ = q.handle.selections()
    lengths = q.handle.arts.layout.length
    rows_low = max(int(lengths[0, t].sum()) for t in teams[:2])  # at least one head's own teams, KV head 0
    got = few.bytes_per_call(w, q) - reps - 2 * s.hq * s.d * item
    assert 2 * rows_low * s.d * item <= got < s.kv_bytes
