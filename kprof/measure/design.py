"""BalancedDesign: the order of methods in every round of a paired comparison.

A method's speed can depend on its position in a round and on the method that ran just before
it, so the order is balanced. In a Williams design every method holds every position equally often
and every ordered pair of methods is adjacent equally often in one cycle. Within a round the
round's order repeats for every observation (A, B, C, A, B, C, ...), so the method before the
first is the last: counted that way, neighbours are balanced over a cycle for two and three
methods, and only roughly for four or more (some ordered pairs meet once a cycle, others twice).
Position effects cancel within a pair cycle; carry-over is averaged over the neighbours the
design gives each method, which is what a speedup from such a run means.

For one pair of methods, a *pair cycle* is the smallest group of rounds over which that pair's
positions and neighbours balance: two rounds in which the two methods swap places (two and
three methods), or a whole design cycle (four or more: swaps there pair rounds whose
neighbours differ, so carry-over would not average out the same way for every pair). The
speedup's estimate and interval are built from one value per pair cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_ROUNDS = 20
WHOLE_CYCLES_FROM = 4  # methods: from here on every pair cycle is a whole design cycle
DEFAULT_PAIR_CYCLES = 10  # a default run gives every speedup at least this many (the interval needs 5)


def _williams_rows(m: int) -> list[tuple[int, ...]]:
    """Williams (1949): first row 0, 1, m-1, 2, m-2, ...; row i adds i (mod m); for odd m the
    mirrored rows follow, since one Latin square cannot balance carry-over there."""
    first, low, high = [0], 1, m - 1
    while len(first) < m:
        if len(first) % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [tuple((x + i) % m for x in first) for i in range(m)]
    if m % 2 and m > 1:
        rows += [tuple(reversed(r)) for r in rows]
    return rows


@dataclass(frozen=True)
class BalancedDesign:
    """The Williams design for ``n_methods`` methods: ``rows[r % cycle]`` is round ``r``'s order."""

    n_methods: int
    rows: tuple[tuple[int, ...], ...]

    @classmethod
    def williams(cls, n_methods: int) -> "BalancedDesign":
        if n_methods < 1:
            raise ValueError("a design needs at least one method")
        return cls(n_methods, tuple(_williams_rows(n_methods)))

    @property
    def cycle(self) -> int:
        """Rounds in one cycle of the design."""
        return len(self.rows)

    def order(self, r: int) -> tuple[int, ...]:
        return self.rows[r % self.cycle]

    def orders(self, rounds: int) -> list[tuple[int, ...]]:
        return [self.order(r) for r in range(rounds)]

    def whole_cycles(self, rounds: int) -> int:
        """``rounds`` rounded up to a whole number of design cycles."""
        return -(-max(rounds, 1) // self.cycle) * self.cycle

    def pair_cycles_per_cycle(self) -> int:
        """The fewest pair cycles one design cycle yields for any pair of methods."""
        orders = self.orders(self.cycle)
        m = self.n_methods
        return min((len(pair_cycles(orders, a, b, self.cycle)) for a in range(m) for b in range(m) if a != b),
                   default=0)

    def default_rounds(self, min_rounds: int = MIN_ROUNDS, min_pair_cycles: int = DEFAULT_PAIR_CYCLES) -> int:
        """The smallest whole number of cycles that is at least ``min_rounds`` and gives every
        pair of methods at least ``min_pair_cycles`` pair cycles."""
        rounds = self.whole_cycles(min_rounds)
        per_cycle = self.pair_cycles_per_cycle()
        while per_cycle and rounds // self.cycle * per_cycle < min_pair_cycles:
            rounds += self.cycle
        return rounds


def position(order: tuple[int, ...], method: int) -> int:
    return order.index(method)


def precedes(order: tuple[int, ...], a: int, b: int) -> bool:
    """Whether ``a`` comes before ``b`` in a round's order."""
    return order.index(a) < order.index(b)


def pair_cycles(orders: list[tuple[int, ...]], a: int, b: int, cycle: int | None = None) -> list[tuple[int, ...]]:
    """Groups of round indices over which the positions of methods ``a`` and ``b`` balance.

    Rounds are taken ``cycle`` at a time (default: all at once). Within a chunk, rounds are
    matched into swaps (``a`` at p and ``b`` at q in one, the reverse in the other), in order.
    If some round of the chunk has no partner, the whole chunk is one group when both methods
    hold the same positions over it (a Latin square does), and is left out otherwise.
    """
    cycle = cycle or len(orders)
    if orders and len(orders[0]) >= WHOLE_CYCLES_FROM:
        return [tuple(range(s, s + cycle)) for s in range(0, len(orders) - cycle + 1, cycle)]
    groups: list[tuple[int, ...]] = []
    for start in range(0, len(orders), cycle):
        chunk = range(start, min(start + cycle, len(orders)))
        pos = {r: (orders[r].index(a), orders[r].index(b)) for r in chunk}
        open_rounds: dict[tuple[int, int], list[int]] = {}
        swaps = []
        for r in chunk:
            p, q = pos[r]
            partners = open_rounds.get((q, p))
            if partners:
                swaps.append((partners.pop(0), r))
            else:
                open_rounds.setdefault((p, q), []).append(r)
        if not any(open_rounds.values()):
            groups += swaps
        elif sorted(p for p, _ in pos.values()) == sorted(q for _, q in pos.values()):
            groups.append(tuple(chunk))
    return groups
