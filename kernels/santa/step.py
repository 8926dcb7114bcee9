"""SantaDecode: workspaces and the five launches of one SANTA++ decode step (four with
``attend.REDUCE``, whose attend combines).

All buffers are allocated in ``__init__``; ``run()`` only launches (no host sync, no allocation,
no Python loop over heads or teams), so it can be captured in a CUDA graph.
"""

from __future__ import annotations

import functools
import math

import torch
import triton

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.core.errors import ConfigError
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.dependent_launch import resolve_pdl
from kprof.kernels.common.grid_sync import LINE_WORDS, sm_count
from kprof.kernels.common.split_kv_combine import bound_combine, split_kv_combine
from kprof.kernels.santa import triton_kernels
from kprof.kernels.santa.bound_select import (
    part_size,
    santa_filter_bound,
    santa_merge_bound,
    santa_noise_table,
    santa_score_bound,
)
from kprof.kernels.santa.preparation import SantaArtifacts
from kprof.kernels.santa.triton_kernels import (
    LOG2E,
    santa_attend,
    santa_block_topk,
    santa_gumbel_dump,
    santa_merge_union,
    santa_score,
)

SELECT_HELP = "0: full bitonic sort; 1: tl.topk (Triton 3.6+); 2: radix select (RADIX_BITS per pass)"
TOPK_SELECT_HELP = SELECT_HELP + "; 3: tl.topk on the 32-bit score word, then a threshold (Triton 3.6+)"
MERGE_SELECT_HELP = SELECT_HELP + "; 3: tl.topk on the 32-bit score words, selection by threshold (Triton 3.6+)"
RADIX_HELP = "bits decided per radix-select pass (SELECT=2): 32/RADIX_BITS reductions of 2^RADIX_BITS counts"
_TOPK_AVAILABLE = Constraint("SELECT=1 and 3 need tl.topk, which this Triton lacks",
                             lambda c, s: c["SELECT"] not in (1, 3) or triton_kernels.HAS_TOPK)

_GATHER_AVAILABLE = Constraint("merge.GATHER=1 needs tl.gather (Triton 3.2+)",
                               lambda c, s: not c.get("GATHER") or triton_kernels.HAS_GATHER)
_CARRY_NEEDS = Constraint("topk.CARRY=1 needs topk.BOUND and tl.gather (Triton 3.2+)",
                          lambda c, s: not c.get("CARRY") or (c["BOUND"] and triton_kernels.HAS_GATHER))
_BOUND_AVAILABLE = Constraint("topk.BOUND needs tl.topk, which this Triton lacks: use topk.BOUND=0",
                              lambda c, s: not c["BOUND"] or triton_kernels.HAS_TOPK)

_DRAW_TEAMS = 256  # teams per step of score.AHEAD's noise draws (the table, the merge's extra programs)

# Selection defaults are the fastest choices measured at 8K, 32K and 128K: the bound filter (topk.BOUND)
# where Triton has tl.topk, the merge by tl.topk with union positions gathered in registers; without
# tl.topk, the block top-k and merge by full sorts. Under BOUND=0 the block top-k's fastest is the
# 32-bit-word threshold (SELECT=3) over BLOCK_T 2048, 16 warps.
_BEST_SELECT = 1 if triton_kernels.HAS_TOPK else 0
_BEST_TOPK_SELECT = 3 if triton_kernels.HAS_TOPK else 0
_BEST_BOUND = 128 if triton_kernels.HAS_TOPK else 0
_BEST_GATHER = 1 if triton_kernels.HAS_GATHER else 0
# with the filter: a merge and a row list per query head (merge.PER_HEAD), its merge at 8 warps and attend
# tiles of 32 rows, 64 ranges a head: the fastest measured at 8K and 32K (docs/perf-notes.md, topic 3).
# Defaults are static per parameter, so the union form (merge.PER_HEAD=0, or topk.BOUND=0) gets them too
# where tl.topk exists, though it was measured faster at 16 merge warps and 64-row tiles; without
# tl.topk (no filter) one 64-row tile per split, the fastest there at 32K
_BEST_PER_HEAD = 1 if triton_kernels.HAS_TOPK else 0
_BEST_MERGE_WARPS = 8
_BEST_BLOCK_R = 32 if triton_kernels.HAS_TOPK else 64
# with the filter (docs/perf-notes.md, topic 3): the noise read from a table drawn ahead, faster at 8K and
# 32K, slower at 128K; the merge's half-row selection, faster at 32K and 128K, slower at 8K. Together
# they are the fastest at 32K, the main job's workload
_BEST_AHEAD = 1 if triton_kernels.HAS_TOPK else 0
_BEST_NARROW = 1 if triton_kernels.HAS_TOPK else 0
# with the filter the block top-k's selection does not run: only its defaults, so a tune does not
# time one configuration once per unused value
_BLOCK_TOPK_ONLY = Constraint(
    "topk.SELECT and topk.RADIX_BITS choose the block top-k's selection, which topk.BOUND replaces: drop them or "
    "set topk.BOUND=0",
    lambda c, s: not c["BOUND"] or (c["SELECT"] == _BEST_TOPK_SELECT and c["RADIX_BITS"] == 2))

LAUNCH_SPACES = {
    "score": LaunchSpace("score", (
        Param("BLOCK_M", (16, 32, 64, 128, 256), 64, "representatives per program"),
        Param("num_warps", (1, 2, 4, 8), 4),
        Param("num_stages", (1, 2, 3), 2),
        Param("PHILOX", (1, 4), 4, "with topk.BOUND, teams per Philox call of the noise: 4 interleaves four "
              "teams' draws through shared memory, 1 computes each team's own (4x the arithmetic, no "
              "data movement); the same draws either way"),
        Param("AHEAD", (0, 1), _BEST_AHEAD, "with topk.BOUND (else ignored), 1 reads the noise from a table "
              "drawn ahead: when the operator is built and, with fresh noise, for the next call by extra "
              "programs of the merge launch on SMs it leaves idle; the same draws as 0, which draws them in "
              "this launch"),
    )),
    "topk": LaunchSpace("topk", (
        Param("BLOCK_T", (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192), 2048, "teams per block (>= K+1)"),
        Param("SELECT", (0, 1, 2, 3), _BEST_TOPK_SELECT, TOPK_SELECT_HELP),
        Param("RADIX_BITS", (1, 2, 4), 2, RADIX_HELP),
        Param("num_warps", (1, 2, 4, 8, 16), 16),
        Param("BOUND", (0, 8, 16, 32, 64, 128, 256), _BEST_BOUND,
              "0: a top-k per block; else a filter: the score launch adds the noise and keeps the maximum "
              "of every few teams, this launch keeps the teams at or above the (K+1)-th largest of those, "
              "up to max(this, K+1 rounded up to a power of two) per head (more: the merge bisects down to "
              "them), and the merge selects from those"),
        Param("CARRY", (0, 1), 0,
              "with BOUND: 1 stores each kept team's phi, length and first row beside its key, so the merge "
              "reads them with the keys rather than after its selection"),
    ), (_TOPK_AVAILABLE, _BOUND_AVAILABLE, _CARRY_NEEDS, _BLOCK_TOPK_ONLY)),
    "merge": LaunchSpace("merge", (
        Param("SELECT", (0, 1, 2, 3), _BEST_SELECT, MERGE_SELECT_HELP),
        Param("RADIX_BITS", (1, 2, 4), 2, RADIX_HELP),
        Param("GATHER", (0, 1), _BEST_GATHER,
              "union position of a repeated team: 0 reads it back from a table in memory, 1 gathers it "
              "from registers (tl.gather, Triton 3.2+)"),
        Param("num_warps", (1, 2, 4, 8, 16), _BEST_MERGE_WARPS),
        Param("CHUNK", (256, 512, 1024, 2048), 512,
              "with topk.BOUND, when more than BOUND teams cleared the bound: teams per head read per step"),
        Param("NARROW", (0, 1), _BEST_NARROW,
              "with topk.BOUND at least 2 x (K+1) rounded up and no topk.CARRY (else ignored): 1 selects from "
              "half of each head's candidate row when no head of the group kept more (a branch on the "
              "counts), else from all of it; 0 always from all of it"),
        Param("PER_HEAD", (0, 1), _BEST_PER_HEAD,
              "with topk.BOUND (else ignored): 1 merges each query head in a program of its own and attends it "
              "by programs of its own, each head over its own selected rows (no GQA union: a row two heads chose "
              "is read twice); attend.NUM_SPLITS then counts row ranges per query head; 0 one program per KV head "
              "and the union of its heads' rows"),
    ), (_TOPK_AVAILABLE, _GATHER_AVAILABLE)),
    "attend": LaunchSpace("attend", (
        Param("BLOCK_R", (16, 32, 64), _BEST_BLOCK_R, "virtual rows per tile"),
        Param("NUM_SPLITS", (1, 2, 4, 8, 16, 32, 64, 128), 64,
              "row ranges per KV head (per query head with merge.PER_HEAD)"),
        Param("SEARCH", (0, 1, 2, 3), 2, "union entry of each row: 0 compares it with every entry's end, "
              "1 binary-searches the tile's first entry, then compares with BLOCK_R ends; 2 finds "
              "that first entry by counting all ends (one load) instead; 3 as 0, with every entry's first "
              "row, base and (one head a list) log c loaded beside the ends and picked in registers: one "
              "dependent load fewer than 0, two fewer than 2; for short lists (merge.PER_HEAD), since "
              "each tile compares BLOCK_R rows with every entry"),
        Param("num_warps", (1, 2, 4, 8), 4),
        Param("num_stages", (1, 2, 3), 1),
        Param("REDUCE", (0, 1), 0,
              "1: the last of each list's range programs combines that list's heads (it counts the others "
              "done, it does not wait for them), and no reduce launch follows (reduce.* then unused): one "
              "launch fewer, one program's combine a list at the end instead"),
    )),
    "reduce": LaunchSpace("reduce", (
        Param("BLOCK_D", (16, 32, 64, 128), 16,
              "head-dim columns per program: grid (Hq, d / BLOCK_D); above d it is d"),
        Param("SKIP_EMPTY", (0, 1), 0,
              "1: values are read only from row ranges that held rows (with merge.PER_HEAD most of a head's "
              "ranges can be empty), after their maxima; 0: from every range, beside the maxima"),
        Param("num_warps", (1, 2, 4, 8), 1),
    )),
}

LAUNCH_KERNELS = {"score": (santa_score, santa_score_bound), "topk": (santa_block_topk, santa_filter_bound),
                  "merge": (santa_merge_union, santa_merge_bound),
                  "attend": (santa_attend,), "reduce": (split_kv_combine,)}
KERNEL_NAMES = ("santa_score", "santa_block_topk", "santa_merge_union", "santa_attend", "split_kv_combine")


class SantaDecode:
    """One SANTA++ decode operator bound to a prepared workload."""

    block_t_name = "topk.BLOCK_T"  # the launch parameter that sets candidates per block
    launch_names = ("score", "topk", "merge", "attend", "reduce")
    kernel_names = KERNEL_NAMES

    def __init__(self, q: torch.Tensor, arts: SantaArtifacts, k_teams: int, config: dict[str, LaunchConfig],
                 seed: int = 0, fresh: bool = False, suffix_k: torch.Tensor | None = None,
                 suffix_v: torch.Tensor | None = None, out_dtype: torch.dtype | None = None,
                 pdl: bool | None = None):
        dev = q.device
        # launches 2-5 with programmatic dependent launch (None: where the GPU and Triton support it)
        self.pdl = resolve_pdl(pdl, dev)
        self._dependent = {"launch_pdl": True} if self.pdl else {}
        hq, d = q.shape
        hkv, n, _ = arts.packed_k.shape
        self.q = q.contiguous()
        self.arts = arts
        self.group = hq // hkv
        if self.group > 8:
            raise ConfigError(f"GQA group {self.group} > 8 is not supported by the SANTA++ kernels")
        self.hq, self.hkv, self.n, self.d = hq, hkv, n, d
        self.m_max = arts.rep_keys.shape[1]
        self.m_min = int(arts.layout.num_teams.min())
        self.all_teams = k_teams >= int(arts.layout.num_teams.max())
        # K = M: launches 2-3 still run (five launches) on a token K = 1 whose result attend ignores
        self.k = 1 if self.all_teams else min(k_teams, self.m_min)
        if not self.all_teams and self.k >= self.m_min:
            raise ConfigError(f"K={k_teams} leaves no (K+1)-th team on a KV head with {self.m_min} teams: "
                              "use K < min teams or K >= max teams (dense path)")
        self.cfg = {name: dict(c) for name, c in config.items()}
        self.kpad = max(2, triton.next_power_of_2(self.k + 1))
        bound = int(self.cfg["topk"].get("BOUND", 0))
        self.bound = max(bound, self.kpad) if bound else 0  # candidates kept per head
        self.carry = bool(self.bound and self.cfg["topk"].get("CARRY"))
        self._kernels = (("santa_score_bound", "santa_filter_bound", "santa_merge_bound", *KERNEL_NAMES[3:])
                         if self.bound else KERNEL_NAMES)
        if self.bound and self.cfg["merge"]["SELECT"] == 3:
            # candidate order is the filter's atomic append order: the union's order would vary
            raise ConfigError("merge.SELECT=3 selects in candidate order, which topk.BOUND's atomic appends leave "
                              "unfixed: use merge.SELECT=1 (or topk.BOUND=0)")
        # merge.PER_HEAD is a form of the filter's merge: ignored without it, as score.AHEAD and merge.NARROW are
        # (and with K = M, where attend streams whole KV heads: once per KV head, not once per query head)
        self.per_head = bool(self.bound and self.cfg.get("merge", {}).get("PER_HEAD") and not self.all_teams)
        if not self.bound and self.cfg.get("score", {}).get("PHILOX", 4) != 4:
            raise ConfigError("score.PHILOX draws the noise in the score launch, which only topk.BOUND does: "
                              "drop score.PHILOX or set topk.BOUND")
        if self.carry and self.m_max * self.bound >= 2**31:
            raise ConfigError(f"topk.CARRY=1 keys team x CAP in 31 bits: {self.m_max} teams x {self.bound} do not "
                              "fit; use topk.CARRY=0 or a smaller topk.BOUND")
        if not self.bound and self.cfg["topk"]["BLOCK_T"] < self.kpad:
            raise ConfigError(f"{self.block_t_name}={self.cfg['topk']['BLOCK_T']} cannot hold the K+1={self.k + 1} "
                              f"working set: use BLOCK_T >= {self.kpad}")
        self.block_g = max(16, triton.next_power_of_2(self.group))  # tl.dot needs >= 16 rows
        self.merge_g = max(2, triton.next_power_of_2(self.group))
        self._sized_by = self._sizing(self.cfg)
        self.n_blocks = triton.cdiv(self.m_max, self.cfg["topk"]["BLOCK_T"])
        self.ncand = self.n_blocks * self.kpad
        self.ncp = max(triton.next_power_of_2(self.ncand), self.kpad)
        # list capacity: a KV head's union of G selections, or with PER_HEAD one head's K (tables per query head)
        self.umax = self.kpad if self.per_head else triton.next_power_of_2(max(2, self.group * self.k))
        lists = hq if self.per_head else hkv
        self.splits = self.cfg["attend"]["NUM_SPLITS"]
        self.inv_sqrt_d = 1.0 / math.sqrt(d)
        self.precision = "ieee" if q.dtype == torch.float32 else "tf32"
        i32, f32 = torch.int32, torch.float32
        self.seed = torch.tensor([seed], dtype=torch.int64, device=dev)
        self.fresh = fresh
        self.scores = torch.empty(hq, self.m_max, dtype=f32, device=dev)
        self.cand = torch.empty(hq, self.n_blocks, self.kpad, dtype=torch.int64, device=dev)
        self.sel_team = torch.empty(hq, self.kpad, dtype=i32, device=dev)
        self.sel_logc = torch.empty(hq, self.kpad, dtype=f32, device=dev)
        self.sel_key = torch.empty(hq, self.kpad, dtype=torch.int64, device=dev)  # merge's SELECT=2 scratch
        self.u_team = torch.empty(lists, self.umax, dtype=i32, device=dev)
        self.u_start = torch.empty(lists, self.umax, dtype=i32, device=dev)
        self.u_rowpre = torch.empty(lists, self.umax + 1, dtype=i32, device=dev)
        self.u_count = torch.empty(lists, dtype=i32, device=dev)
        heads_per_list = 1 if self.per_head else self.block_g
        self.u_mask = torch.empty(lists, self.umax, heads_per_list, dtype=torch.int8, device=dev)
        self.u_logc = torch.empty(lists, self.umax, heads_per_list, dtype=f32, device=dev)
        # union bookkeeping per team slot; Owner must hold INT_MAX between calls (merge restores it)
        self.owner = torch.full((hkv, self.m_max), 2**31 - 1, dtype=i32, device=dev)
        self.pos = torch.empty(hkv, self.m_max, dtype=i32, device=dev)
        if self.bound:  # part maxima for parts of one team and BLOCK_M up to 256: bind() may change either
            self.y = torch.empty(hq, self.m_max, dtype=f32, device=dev)
            self.part_max = torch.empty(hq, self.m_max + 256, dtype=f32, device=dev)
            self.bound_count = torch.zeros(hq, dtype=i32, device=dev)  # the score launch zeroes it
            self.bound_keys = torch.empty(hq, self.bound, dtype=torch.int64, device=dev)
            # topk.CARRY: phi, length and first row of each kept team, beside its key
            self.bound_phi = torch.empty(hq, self.bound, dtype=f32, device=dev)
            self.bound_len = torch.empty(hq, self.bound, dtype=i32, device=dev)
            self.bound_start = torch.empty(hq, self.bound, dtype=i32, device=dev)
            # score.AHEAD: the noise drawn ahead, and [the seed it holds, the next call's seed]
            self.noise_table = torch.empty(hq, self.m_max, dtype=f32, device=dev)
            self.noise_seeds = torch.full((2,), -1, dtype=torch.int64, device=dev)
        self.m_part = torch.empty(hq, self.splits, dtype=f32, device=dev)
        self.l_part = torch.empty_like(self.m_part)
        self.acc = torch.empty(hq, self.splits, d, dtype=f32, device=dev)
        # attend.REDUCE: per list, its range programs done this call (one 128-byte line each; zero between calls)
        self.attend_done = torch.zeros(lists * LINE_WORDS.value, dtype=i32, device=dev)
        # out_dtype=float32 keeps P.V and the output in fp32: the accumulation error on its own
        self.out = torch.empty(hq, d, dtype=out_dtype or q.dtype, device=dev)
        self.pv_fp32 = self.out.dtype == torch.float32 and q.dtype != torch.float32
        e = 0 if suffix_k is None else suffix_k.shape[1]
        self.n_suffix = e
        self.suffix_k = (suffix_k if e else torch.zeros(hkv, 1, d, dtype=q.dtype, device=dev)).contiguous()
        self.suffix_v = (suffix_v if e else torch.zeros(hkv, 1, d, dtype=q.dtype, device=dev)).contiguous()
        self.bind()

    # ------------------------------------------------------------------ the launches

    @property
    def narrow(self) -> bool:
        """merge.NARROW in effect: it halves the selection's row where half a row still holds K+1
        rounded up, and not with topk.CARRY, whose values sit in the rows' columns."""
        return bool(self.bound and self.cfg["merge"].get("NARROW") and self.bound >= 2 * self.kpad and not self.carry)

    @property
    def ahead(self) -> bool:
        """score.AHEAD in effect: it chooses where the noise comes from, which only the filter adds."""
        return bool(self.bound and self.cfg["score"].get("AHEAD") and not self.all_teams)

    @staticmethod
    def _sizing(cfg) -> tuple:
        """The parameters that size buffers or choose the launches (a prepared method holds its stages
        and kernel names): a change needs a new SantaDecode."""
        return (cfg["topk"]["BLOCK_T"], cfg["attend"]["NUM_SPLITS"], cfg["topk"].get("BOUND", 0),
                cfg.get("merge", {}).get("PER_HEAD", 0), cfg["attend"].get("REDUCE", 0))

    def bind(self) -> None:
        """Fix the launches' grids and arguments, so a call costs only Triton's dispatch. Call it
        again after changing a parameter that neither sizes a buffer nor chooses the launches (all
        but ``_sizing``'s, which need a new SantaDecode)."""
        c, a, dep = self.cfg, self.arts, self._dependent
        if self._sizing(c) != self._sized_by:
            raise ValueError("topk.BLOCK_T, attend.NUM_SPLITS, topk.BOUND, merge.PER_HEAD and attend.REDUCE size "
                             "this step's buffers or choose its launches: build a new SantaDecode to change them")
        if self.bound:
            self._bind_bound()
        else:
            self._bind_block_topk()
        reduce_in_attend = bool(c["attend"].get("REDUCE"))
        self.launch_attend = bound_launch(
            santa_attend, (self.hq if self.per_head else self.hkv, self.splits),
            self.q, a.packed_k, a.packed_v, self.suffix_k, self.suffix_v,
            self.u_start, self.u_rowpre, self.u_logc,
            self.m_part, self.l_part, self.acc,
            self.n, self.n_suffix, self.inv_sqrt_d * LOG2E,
            self.q.stride(0), a.packed_k.stride(0), a.packed_k.stride(1),
            self.suffix_k.stride(0), self.suffix_k.stride(1), self.u_mask.stride(0), self.u_mask.stride(1),
            self.m_part.stride(0), self.acc.stride(0), self.acc.stride(1),
            GROUP=1 if self.per_head else self.group, BLOCK_G=self.block_g, BLOCK_R=c["attend"]["BLOCK_R"],
            HEAD_D=self.d, UMAX=self.umax,
            NUM_SPLITS=self.splits, ALL_TEAMS=self.all_teams, DOT_PRECISION=self.precision, PV_FP32=self.pv_fp32,
            SEARCH=c["attend"]["SEARCH"], LOG2_UMAX=self.umax.bit_length() - 1, SUFFIX=self.n_suffix > 0,
            PDL=self.pdl, KV_GROUP=self.group if self.per_head else 1,
            Done=self.attend_done, Out=self.out, stride_oh=self.out.stride(0), REDUCE=reduce_in_attend,
            BLOCK_S=max(2, triton.next_power_of_2(self.splits)),
            num_warps=c["attend"]["num_warps"], num_stages=c["attend"]["num_stages"], **dep,
        )
        self.launch_reduce = bound_combine(self.m_part, self.l_part, self.acc, self.out, self.splits,
                                           c["reduce"]["BLOCK_D"], c["reduce"]["num_warps"], pdl=self.pdl,
                                           skip_empty=c["reduce"]["SKIP_EMPTY"])
        # attend.REDUCE: the reduce launch is not made, and the stages and kernels say so
        self.launch_names = type(self).launch_names[:4 if reduce_in_attend else 5]
        self.kernel_names = self._kernels[:4 if reduce_in_attend else 5]
        self._launches = tuple(getattr(self, f"launch_{name}") for name in self.launch_names)

    def _bind_block_topk(self) -> None:
        """Launches 1-3 with the block top-k (``topk.BOUND=0``)."""
        c, a, dep = self.cfg, self.arts, self._dependent
        self.launch_score = bound_launch(
            santa_score, (self.hkv, triton.cdiv(self.m_max, c["score"]["BLOCK_M"])),
            self.q, a.rep_keys, self.scores, self.m_max,
            self.q.stride(0), a.rep_keys.stride(0), a.rep_keys.stride(1), self.scores.stride(0),
            GROUP=self.group, BLOCK_G=self.block_g, BLOCK_M=c["score"]["BLOCK_M"], HEAD_D=self.d,
            DOT_PRECISION=self.precision, PDL=self.pdl,
            num_warps=c["score"]["num_warps"], num_stages=c["score"]["num_stages"],
        )
        self.launch_topk = bound_launch(
            santa_block_topk, (self.hq, self.n_blocks),
            self.scores, a.team_len, a.num_teams, self.seed, self.cand,
            self.m_max, self.inv_sqrt_d,
            self.scores.stride(0), a.team_len.stride(0), self.cand.stride(0), self.cand.stride(1),
            GROUP=self.group, BLOCK_T=c["topk"]["BLOCK_T"], KPAD=self.kpad, NOISE=not self.all_teams,
            SELECT=c["topk"]["SELECT"], RADIX_BITS=c["topk"]["RADIX_BITS"], PDL=self.pdl,
            num_warps=c["topk"]["num_warps"], **dep,
        )
        self.launch_merge = bound_launch(
            santa_merge_union, (self.hkv,),
            self.cand, self.scores, a.team_len, a.team_start, self.sel_team, self.sel_logc, self.sel_key,
            self.u_team, self.u_start, self.u_rowpre, self.u_count, self.u_mask, self.u_logc,
            self.owner, self.pos, self.seed,
            self.inv_sqrt_d, self.k, self.m_max,
            self.cand.stride(0), self.scores.stride(0), a.team_len.stride(0), self.sel_team.stride(0),
            self.u_mask.stride(0), self.u_mask.stride(1),
            GROUP=self.group, BLOCK_G=self.merge_g, NCP=self.ncp, NCAND=self.ncand, KPAD=self.kpad,
            UMAX=self.umax, FRESH=self.fresh, SELECT=c["merge"]["SELECT"],
            RADIX_BITS=c["merge"]["RADIX_BITS"], GATHER=bool(c["merge"]["GATHER"]), PDL=self.pdl,
            num_warps=c["merge"]["num_warps"], **dep,
        )

    def _bind_bound(self) -> None:
        """Launches 1-3 in their ``topk.BOUND`` forms (``bound_select``)."""
        c, a, dep = self.cfg, self.arts, self._dependent
        block_m = c["score"]["BLOCK_M"]
        n_tiles = triton.cdiv(self.m_max, block_m)
        self.part = part_size(block_m, self.m_min, self.kpad)
        self.n_parts = n_tiles * (block_m // self.part)
        philox, ahead = c["score"]["PHILOX"], self.ahead
        noise = (self.noise_table, self.noise_seeds)
        if ahead:  # the first call's table (untimed); with fresh noise each merge draws the next one
            santa_noise_table[(self.hkv, triton.cdiv(self.m_max, _DRAW_TEAMS))](
                self.seed, *noise, self.m_max, self.noise_table.stride(0),
                GROUP=self.group, BLOCK_G=self.merge_g, N=_DRAW_TEAMS, PHILOX=philox)
        draw_n = _DRAW_TEAMS if ahead and self.fresh else 0
        # drawers per merge row (a KV head, or with PER_HEAD a query head): one wave beside the merge's programs
        # (the attend launch waits for all)
        merges = self.hq if self.per_head else self.hkv
        drawers = (max(1, min(triton.cdiv(self.m_max, draw_n), (sm_count(self.q.device) - merges) // merges))
                   if draw_n else 0)
        self.launch_score = bound_launch(
            santa_score_bound, (self.hkv, n_tiles),
            self.q, a.rep_keys, self.scores, self.y, self.part_max, a.team_len, a.num_teams, self.seed,
            self.bound_count, *noise, self.m_max, self.inv_sqrt_d,
            self.q.stride(0), a.rep_keys.stride(0), a.rep_keys.stride(1), self.scores.stride(0),
            a.team_len.stride(0), self.part_max.stride(0), self.noise_table.stride(0),
            GROUP=self.group, BLOCK_G=self.block_g, BLOCK_M=block_m, HEAD_D=self.d,
            DOT_PRECISION=self.precision, NOISE=not self.all_teams, SUB=self.part, PHILOX=philox, AHEAD=ahead,
            PDL=self.pdl,
            num_warps=c["score"]["num_warps"], num_stages=c["score"]["num_stages"],
        )
        ntp = max(self.kpad, triton.next_power_of_2(self.n_parts))
        self.launch_topk = bound_launch(
            santa_filter_bound, (self.hq, triton.cdiv(self.m_max, c["topk"]["BLOCK_T"])),
            self.y, self.part_max, self.bound_count, self.bound_keys, self.scores, a.team_len, a.team_start,
            self.bound_phi, self.bound_len, self.bound_start, self.k, self.m_max, self.n_parts, self.inv_sqrt_d,
            self.y.stride(0), self.part_max.stride(0), self.bound_keys.stride(0), self.scores.stride(0),
            a.team_len.stride(0), GROUP=self.group,
            BLOCK_T=c["topk"]["BLOCK_T"], NTP=ntp, KPAD=self.kpad, CAP=self.bound, CARRY=self.carry, PDL=self.pdl,
            num_warps=c["topk"]["num_warps"], **dep,
        )
        self.launch_merge = bound_launch(
            santa_merge_bound, (merges, 1 + drawers),
            self.y, self.part_max, self.bound_count, self.bound_keys, self.bound_phi, self.bound_len,
            self.bound_start, self.scores, a.team_len, a.team_start, self.sel_team, self.sel_logc, self.sel_key,
            self.u_team, self.u_start, self.u_rowpre, self.u_count, self.u_mask, self.u_logc,
            self.owner, self.pos, self.seed, *noise,
            self.inv_sqrt_d, self.k, self.m_max, self.n_parts,
            self.scores.stride(0), self.part_max.stride(0), self.bound_keys.stride(0), a.team_len.stride(0),
            self.sel_team.stride(0), self.u_mask.stride(0), self.u_mask.stride(1), self.noise_table.stride(0),
            GROUP=self.group, BLOCK_G=2 if self.per_head else self.merge_g, NTP=ntp,
            CAP=self.bound, CHUNK=c["merge"]["CHUNK"],
            KPAD=self.kpad, UMAX=self.umax, FRESH=self.fresh, SELECT=c["merge"]["SELECT"],
            RADIX_BITS=c["merge"]["RADIX_BITS"], GATHER=bool(c["merge"]["GATHER"]), CARRY=self.carry,
            PDL=self.pdl, DRAW_N=draw_n, PHILOX=philox if draw_n else 4, NARROW=self.narrow,
            PER_HEAD=self.per_head, num_warps=c["merge"]["num_warps"], **dep,
        )

    def stages(self):
        """The launches by name; each looks its bound launch up when called, so stages follow a
        later ``bind()`` (which launches there are is fixed at construction: ``_sizing``)."""
        return tuple((name, functools.partial(self._call, f"launch_{name}")) for name in self.launch_names)

    def _call(self, attribute: str) -> None:
        getattr(self, attribute)()

    def run(self) -> torch.Tensor:
        for launch in self._launches:
            launch()
        return self.out

    # ------------------------------------------------------------------ validation access

    def gumbel_noise(self) -> torch.Tensor:
        """``[Hq, M_max]`` Gumbel noise launch 2 adds with the current seed (not timed)."""
        out = torch.empty(self.hq, self.m_max, dtype=torch.float32, device=self.q.device)
        santa_gumbel_dump[(self.hq, triton.cdiv(self.m_max, 256))](self.seed, out, self.m_max, out.stride(0), BLOCK=256)
        return out

    def selections(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Per query head: selected team ids and c_g of the last run (host copies)."""
        if self.all_teams:
            m = self.arts.layout.num_teams.tolist()
            ids = [torch.arange(m[h // self.group]) for h in range(self.hq)]
            return ids, [torch.ones(len(t), dtype=torch.float64) for t in ids]
        teams = self.sel_team[:, : self.k].cpu().to(torch.int64)
        logc = self.sel_logc[:, : self.k].cpu().to(torch.float64)
        return list(teams), list(torch.exp(logc))
