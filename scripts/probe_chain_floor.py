"""The floor of any five-launch SANTA++ chain on this GPU, measured: what the SANTA++ issue's
2.5x target (<= 18.5 us against Flash at 32K) leaves for the launches' own work.

Three chains with SANTA++'s grids, warps and launch order, timed in the same paired rounds as
Flash and SANTA++ itself (eviction before every call, host gate, CUDA events):

- ``empty``: five launches that only wait for their predecessor (PDL) and store one word per
  program: launch and boundary cost alone.
- ``skeleton``: a subset of the real chain's data movement and nothing else. Launch 1 is the
  real scorer (load each representative tile once, one tensor-core product, store the scores)
  and launch 5 the real reducer: both are already only their loads and stores. Launches 2-4
  keep their grids and the chain of dependent loads of the real kernels but none of their
  selection work: top-k loads its block of scores and stores K+1 candidates derived from their
  maximum; merge loads the candidates, then the team starts at the candidates' team ids, then
  (through an index that depends on those) the union starts and row prefix sums of the real
  union; attend loads the union's ends, its rows' entry starts and then the K/V rows of the
  real union (three dependent levels, as in the real kernel) and stores partials. With
  ``merge.PER_HEAD`` (santa's default) the lists are one per query head, and the merge and attend
  skeletons run on Hq lists as the real launches do. Left out, so
  the skeleton is a lower bound: top-k's team lengths and noise seed, merge's score and length
  gathers, table resets and scattered mask stores, attend's log c_g loads.
- ``skeleton`` and ``empty`` without PDL (each launch waits for the last one to drain).

The difference between SANTA++ and the skeleton is the selection and softmax work inside the
launches; the skeleton is a lower bound on these five launches at its geometry. Each
skeleton's chain prefixes give its launches' marginal costs; the best marginal of each launch
over all geometries (clamped at 0) adds to an optimistic bound, printed beside the best single
geometry's whole chain.

Compiled loads are checked, not assumed: a value that only feeds ``x & 0`` lets the compiler
drop its load, so the dependent indices below go through a runtime ``sentinel`` comparison
(never true: ids and rows are never negative) that the compiler cannot fold.

    python scripts/probe_chain_floor.py [--workload FILE] [--rounds 5] [--observations 300] [--json FILE]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# isort: off
import kprof.kernels  # noqa: F401  (decides on the interpreter before triton, whose own jit functions it sets)
# isort: on
import torch
import triton
import triton.language as tl
from probe_session import open_probe_session, probe_arguments

from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor
from kprof.kernels.common.split_kv_combine import split_kv_combine
from kprof.kernels.santa.triton_kernels import santa_score
from kprof.measure.harness import TimedOp
from kprof.measure.stats import latency


@triton.jit
def _skel_topk(Scores, Cand, m_max, stride_sh, stride_ch, stride_cb,
               BLOCK_T: tl.constexpr, KPAD: tl.constexpr, EMPTY: tl.constexpr, PDL: tl.constexpr):
    h = tl.program_id(0)
    b = tl.program_id(1)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    offs_k = tl.arange(0, KPAD)
    if EMPTY:
        tl.store(Cand + h * stride_ch + b * stride_cb, 0)
    else:
        offs = b * BLOCK_T + tl.arange(0, BLOCK_T)
        s = tl.load(Scores + h * stride_sh + offs, mask=offs < m_max, other=float("-inf"))
        top = tl.max(s, axis=0).to(tl.int32, bitcast=True).to(tl.int64)
        tl.store(Cand + h * stride_ch + b * stride_cb + offs_k, (top << 32) | (b * BLOCK_T + offs_k))


@triton.jit
def _skel_merge(Cand, Starts, SrcStart, SrcRowPre, UStart, URowPre, m_max, stride_ch, stride_lh, sentinel,
                GROUP: tl.constexpr, BLOCK_G: tl.constexpr, NCP: tl.constexpr, NCAND: tl.constexpr,
                UMAX: tl.constexpr, EMPTY: tl.constexpr, PDL: tl.constexpr, KV_GROUP: tl.constexpr = 1):
    kvh = tl.program_id(0)  # the list (a KV head's union, or with KV_GROUP > 1 one query head's own)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    offs_u = tl.arange(0, UMAX)
    if EMPTY:
        tl.store(UStart + kvh * UMAX, 0)
    else:
        offs_g = tl.arange(0, BLOCK_G)
        offs_c = tl.arange(0, NCP)
        heads = kvh * GROUP + offs_g
        live = (offs_g[:, None] < GROUP) & (offs_c[None, :] < NCAND)
        cand = tl.load(Cand + heads[:, None] * stride_ch + offs_c[None, :], mask=live, other=0)
        # each candidate column's team id (low word of its best key), then that team's start
        team = (tl.max(cand, axis=0) & 0xFFFFFFFF).to(tl.int32) % m_max
        start = tl.load(Starts + (kvh // KV_GROUP) * stride_lh + team)
        zero = (tl.min(start, axis=0) == sentinel).to(tl.int32)  # 0 at run time, not foldable
        src = tl.load(SrcStart + kvh * UMAX + offs_u + zero)
        tl.store(UStart + kvh * UMAX + offs_u, src)
        tl.store(URowPre + kvh * (UMAX + 1) + offs_u, tl.load(SrcRowPre + kvh * (UMAX + 1) + offs_u + zero))
        tl.store(URowPre + kvh * (UMAX + 1) + UMAX, tl.load(SrcRowPre + kvh * (UMAX + 1) + UMAX + zero))


@triton.jit
def _skel_attend(PK, PV, UStart, URowPre, M_out, L_out, Acc_out, stride_kh, stride_kn, stride_mh, stride_ah,
                 stride_as, GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_R: tl.constexpr,
                 HEAD_D: tl.constexpr, UMAX: tl.constexpr, NUM_SPLITS: tl.constexpr, EMPTY: tl.constexpr,
                 PDL: tl.constexpr, KV_GROUP: tl.constexpr = 1):
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + offs_g
    g_mask = offs_g < GROUP
    offs_d = tl.arange(0, HEAD_D)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    acc = tl.zeros([BLOCK_G, HEAD_D], dtype=tl.float32)
    if not EMPTY:
        row_pre = URowPre + kvh * (UMAX + 1)
        total = tl.load(row_pre + UMAX)
        ends = tl.load(row_pre + 1 + tl.arange(0, UMAX))
        per_split = tl.cdiv(tl.cdiv(total, NUM_SPLITS), BLOCK_R) * BLOCK_R
        lo = split * per_split
        hi = tl.minimum(lo + per_split, total)
        for r0 in range(lo, hi, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            live = rows < hi
            u0 = tl.sum((ends <= tl.minimum(r0, total - 1)).to(tl.int32), axis=0)
            w_ends = tl.load(row_pre + 1 + u0 + tl.arange(0, BLOCK_R), mask=u0 + tl.arange(0, BLOCK_R) < UMAX,
                             other=2147483647)
            u = tl.where(live, u0 + tl.sum((w_ends[None, :] <= rows[:, None]).to(tl.int32), axis=1), 0)
            start = tl.load(UStart + kvh * UMAX + u, mask=live, other=0)
            base = tl.load(row_pre + u, mask=live, other=0)
            packed = start + rows - base
            k = tl.load(PK + (kvh // KV_GROUP) * stride_kh + packed[:, None] * stride_kn + offs_d[None, :],
                        mask=live[:, None], other=0.0)
            v = tl.load(PV + (kvh // KV_GROUP) * stride_kh + packed[:, None] * stride_kn + offs_d[None, :],
                        mask=live[:, None], other=0.0)
            acc += tl.sum((k + v).to(tl.float32), axis=0)[None, :]
    tl.store(M_out + heads * stride_mh + split, tl.zeros([BLOCK_G], dtype=tl.float32), mask=g_mask)
    tl.store(L_out + heads * stride_mh + split, tl.zeros([BLOCK_G], dtype=tl.float32) + 1.0, mask=g_mask)
    tl.store(Acc_out + heads[:, None] * stride_ah + split * stride_as + offs_d[None, :], acc, mask=g_mask[:, None])


@dataclass(frozen=True)
class Geometry:
    """The launch geometry a skeleton runs at (the operator's defaults unless given)."""

    block_m: int | None = None  # score: representatives per program
    block_r: int | None = None  # attend: rows per tile
    splits: int | None = None  # attend: row ranges per KV head (and the reducer's partials)

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in (("BLOCK_M", self.block_m), ("BLOCK_R", self.block_r),
                                          ("splits", self.splits)) if v is not None]
        return f" [{', '.join(parts)}]" if parts else ""


class SkeletonChain:
    """Five launches with a prepared ``SantaDecode``'s grids (or ``geometry``'s), reading its
    buffers: launch 1 the real scorer, 2-4 their data movement only, 5 the real reducer
    (``empty``: every launch only waits and stores a word)."""

    def __init__(self, op, empty: bool, pdl: bool, geometry: Geometry = Geometry()):
        self.op, self.empty, self.pdl = op, empty, pdl and op.pdl
        self.pdl_asked = pdl
        dev = op.q.device
        self.block_m = geometry.block_m or op.cfg["score"]["BLOCK_M"]
        self.block_r = geometry.block_r or op.cfg["attend"]["BLOCK_R"]
        self.splits = geometry.splits or op.splits
        # the row lists of the operator's last run: a union per KV head, or with merge.PER_HEAD a list per query head
        self.lists = op.u_start.shape[0]
        self.kv_group = op.group if op.per_head else 1
        self.src_start = op.u_start.clone()
        self.src_rowpre = op.u_rowpre.clone()
        self.u_start = torch.empty_like(op.u_start)
        self.u_rowpre = torch.empty_like(op.u_rowpre)
        self.cand = torch.empty_like(op.cand)
        self.scores = torch.empty_like(op.scores)
        self.m_part = torch.empty(op.hq, self.splits, dtype=torch.float32, device=dev)
        self.l_part = torch.empty_like(self.m_part)
        self.acc = torch.empty(op.hq, self.splits, op.d, dtype=torch.float32, device=dev)
        self.out = torch.empty_like(op.out)
        self.words = torch.empty(op.hq, 256, dtype=torch.int64, device=dev)  # the empty launches' stores
        self._dep = {"launch_pdl": True} if self.pdl else {}

    def launches(self):
        return (("score", self.score), ("topk", self.topk), ("merge", self.merge), ("attend", self.attend),
                ("reduce", self.reduce))

    def _empty(self, grid, num_warps, dependent=True):
        _skel_topk[grid](self.scores, self.words, self.op.m_max, self.scores.stride(0), self.words.stride(0), 1,
                         BLOCK_T=32, KPAD=32, EMPTY=True, PDL=self.pdl, num_warps=num_warps,
                         **(self._dep if dependent else {}))

    def score(self):  # the chain's first launch: never launched as a dependent
        op = self.op
        grid = (op.hkv, triton.cdiv(op.m_max, self.block_m))
        if self.empty:
            return self._empty(grid, op.cfg["score"]["num_warps"], dependent=False)
        santa_score[grid](
            op.q, op.arts.rep_keys, self.scores, op.m_max, op.q.stride(0), op.arts.rep_keys.stride(0),
            op.arts.rep_keys.stride(1), self.scores.stride(0), GROUP=op.group, BLOCK_G=op.block_g,
            BLOCK_M=self.block_m, HEAD_D=op.d, DOT_PRECISION=op.precision, PDL=self.pdl,
            num_warps=op.cfg["score"]["num_warps"], num_stages=op.cfg["score"]["num_stages"])

    def topk(self):
        op = self.op
        _skel_topk[(op.hq, op.n_blocks)](
            self.scores, self.cand, op.m_max, self.scores.stride(0), self.cand.stride(0), self.cand.stride(1),
            BLOCK_T=op.cfg["topk"]["BLOCK_T"], KPAD=op.kpad, EMPTY=self.empty, PDL=self.pdl,
            num_warps=op.cfg["topk"]["num_warps"], **self._dep)

    def merge(self):
        op = self.op
        _skel_merge[(self.lists,)](
            self.cand, op.arts.team_start, self.src_start, self.src_rowpre, self.u_start, self.u_rowpre, op.m_max,
            self.cand.stride(0), op.arts.team_start.stride(0), -1, GROUP=1 if op.per_head else op.group,
            BLOCK_G=2 if op.per_head else op.merge_g, NCP=op.ncp, NCAND=op.ncand, UMAX=op.umax, EMPTY=self.empty,
            PDL=self.pdl, KV_GROUP=self.kv_group, num_warps=op.cfg["merge"]["num_warps"], **self._dep)

    def attend(self):
        op = self.op
        a = op.arts
        _skel_attend[(self.lists, self.splits)](
            a.packed_k, a.packed_v, self.u_start, self.u_rowpre, self.m_part, self.l_part, self.acc,
            a.packed_k.stride(0), a.packed_k.stride(1), self.m_part.stride(0), self.acc.stride(0),
            self.acc.stride(1), GROUP=1 if op.per_head else op.group, BLOCK_G=op.block_g, BLOCK_R=self.block_r,
            HEAD_D=op.d, UMAX=op.umax, NUM_SPLITS=self.splits, EMPTY=self.empty, PDL=self.pdl, KV_GROUP=self.kv_group,
            num_warps=op.cfg["attend"]["num_warps"], num_stages=op.cfg["attend"]["num_stages"], **self._dep)

    def reduce(self):
        op, c = self.op, self.op.cfg["reduce"]
        block_d = min(c["BLOCK_D"], op.d)
        if self.empty:
            return self._empty((op.hq, op.d // block_d), c["num_warps"])
        split_kv_combine[(op.hq, op.d // block_d)](
            self.m_part, self.l_part, self.acc, self.out, self.splits, self.m_part.stride(0), self.acc.stride(0),
            self.acc.stride(1), self.out.stride(0), BLOCK_S=max(2, triton.next_power_of_2(self.splits)),
            BLOCK_D=block_d, PDL=self.pdl, SKIP_EMPTY=c["SKIP_EMPTY"], num_warps=c["num_warps"], **self._dep)

    def run(self):
        for _, launch in self.launches():
            launch()


# skeleton geometries beside SANTA++'s own: one attend tile per split (more splits, or wider
# tiles), and fewer or more representatives per scorer program
GEOMETRIES = (Geometry(splits=128), Geometry(block_r=64), Geometry(block_r=16, splits=128),
              Geometry(block_m=32), Geometry(block_m=128))
LAUNCHES = (("score", 0), ("topk", 1), ("merge", 2), ("attend", 3), ("reduce", 4))


def main() -> None:
    ap = probe_arguments(__doc__.split("\n")[0], rounds=5, observations=300, warmup_pairs=30)
    ap.add_argument("--santa-variants", nargs="*", default=["santa:attend.NUM_SPLITS=128", "santa:attend.BLOCK_R=64"],
                    help="real SANTA++ variants timed in the same rounds")
    args = ap.parse_args()

    session = open_probe_session(args)
    santa = session.prepare("santa", "santa", "subject").prepared
    flash = session.prepare("flash" if session.target.is_gpu else "math", "flash", "baseline").prepared
    real = [TimedOp(spec, session.prepare(spec, spec, "subject").prepared.run) for spec in args.santa_variants]
    op = santa.handle
    if "reduce" not in op.launch_names:
        raise SystemExit("santa combines in attend here (attend.REDUCE=1), and the skeleton models five launches: "
                         "time it with attend.REDUCE=0")
    santa.run()
    if session.target.is_gpu:
        torch.cuda.synchronize()
    chains = {f"{kind}{'' if pdl else ' (no PDL)'}": SkeletonChain(op, kind == "empty", pdl)
              for kind in ("skeleton", "empty") for pdl in (True, False)}
    for g in GEOMETRIES:
        chains[f"skeleton{g.label()}"] = SkeletonChain(op, False, True, g)
    for chain in chains.values():
        chain.run()
    if session.target.is_gpu:
        torch.cuda.synchronize()
    for label, chain in chains.items():  # every skeleton's attend reads the real union
        if not chain.empty and not (torch.equal(chain.u_start, op.u_start)
                                    and torch.equal(chain.u_rowpre, op.u_rowpre)):
            raise SystemExit(f"{label}: the skeleton's union differs from the operator's")
    rows = int(op.u_rowpre[:, -1].sum())
    per = "query" if op.per_head else "KV"
    print(f"list rows over {chains['skeleton'].lists} lists (per {per} head): {rows} "
          f"({rows * op.d * 2 * 2 / 1e6:.2f} MB of K/V); "
          f"representative key table {op.arts.rep_keys.numel() * op.arts.rep_keys.element_size() / 1e6:.2f} MB "
          f"(padded to the largest head's teams); PDL {op.pdl}")
    ops = [TimedOp("flash", flash.run), TimedOp("santa", santa.run), *real,
           *(TimedOp(k, c.run) for k, c in chains.items())]
    obs = session.harness().paired(ops).observations
    medians = {o.label: latency(x).estimate for o, x in zip(ops, obs)}
    session.protocol = session.protocol.with_overrides(stage_observations=args.observations)
    marginals, wholes = {}, {}
    for label, chain in chains.items():
        if chain.empty or not chain.pdl_asked:
            continue
        launches = chain.launches()
        prefixes = [TimedOp(str(i), (lambda i=i, ls=launches: [f() for _, f in ls[:i + 1]])) for i in range(5)]
        pm = [latency(x).estimate for x in session.harness().chain(prefixes).observations]
        marginals[label] = {name: b - a for (name, _), a, b in zip(launches, [0.0] + pm, pm)}
        wholes[label] = pm[-1]
    print(f"\n{'chain':>44s} {'median us':>10s} {'flash / it':>11s}")
    for label, m in medians.items():
        print(f"{label:>44s} {m:10.2f} {medians['flash'] / m:11.3f}")
    print(f"\n{'skeleton, marginal us in the chain':>44s} " + " ".join(f"{n:>7s}" for n, _ in LAUNCHES))
    for label, ms in marginals.items():
        print(f"{label:>44s} " + " ".join(f"{ms[n]:7.2f}" for n, _ in LAUNCHES))
    best = {n: max(0.0, min(ms[n] for ms in marginals.values())) for n, _ in LAUNCHES}
    target = medians["flash"] / 2.5
    floor = sum(best.values())
    single = min(wholes, key=wholes.get)
    print(f"\n2.5x target: <= {target:.2f} us. Skeleton at SANTA++'s grids: {medians['skeleton']:.2f} us; "
          f"best single geometry ({single}): {wholes[single]:.2f} us as chain prefixes, "
          f"{medians[single]:.2f} us in the paired rounds. Optimistic bound, the best marginal of each launch over "
          f"the geometries: {floor:.2f} us ({', '.join(f'{n} {v:.2f}' for n, v in best.items())}), leaving "
          f"{target - floor:.2f} us for all selection and softmax work (SANTA++ spends "
          f"{medians['santa'] - medians['skeleton']:.2f} us on it over its skeleton now)")
    if args.json:
        args.json.write_text(json.dumps({"medians_us": medians, "skeleton_marginals_us": marginals,
                                         "best_marginals_us": best, "skeleton_chain_us": wholes, "union_rows": rows,
                                         "pdl": op.pdl}, indent=1))

if __name__ == "__main__":
    main()
