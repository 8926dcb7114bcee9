"""The candidate worker's loop, driven in-process through a stand-in connection."""

from kprof.tuning.worker import WorkerSpec, _serve


class _Conn:
    """Hands the worker its messages in order and keeps what it sends back."""

    def __init__(self, *messages):
        self.messages, self.sent = list(messages), []

    def recv(self):
        return self.messages.pop(0)

    def send(self, message):
        self.sent.append(message)


def test_a_launch_the_configuration_does_not_make_fails_in_one_line(tiny):
    """santa with attend.REDUCE=1 makes no reduce launch: each reduce candidate is one failed line
    that says so, not a ValueError from a list lookup."""
    spec = WorkerSpec("santa:p=8,r=2,s=8,attend.REDUCE=1", tiny[0], "cpu", "reduce", rounds=1, observations=1,
                      warmup=0, evict_mib=1)
    conn = _Conn(("measure", {"num_warps": 1}), ("stop",))
    _serve(conn, spec)
    ready, (status, reason) = conn.sent
    assert ready[0] == "ready" and status == "failed"
    assert "makes no 'reduce' launch" in reason and "score, topk, merge, attend" in reason
