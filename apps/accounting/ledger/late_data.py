"""Late data for a closed month: live usage compared with what the close froze, as the cells to
book in the next open month (docs/accounting.md, "Late data for a closed month").

Pure: cells in, cells out (`core.lines.Cell`); pinned by tests/accounting/ledger/test_late_data.py.
"""
from __future__ import annotations

from math import fsum

from apps.accounting.core.lines import SECONDS_EPSILON, Cell

CellKey = tuple  # (cluster_id, namespace, gpu_model, mig_profile, day)
Pair = tuple     # (team, price class): what a closed month booked a day key's hours under


def cell_key(c) -> CellKey:
    return (c.cluster_id, c.namespace, c.gpu_model, c.mig_profile, c.day)


def _by_pair(cells) -> dict[CellKey, dict[Pair, list]]:
    """Day key → (team, price class) → [cluster name, GPU-s, used GPU-s, MIG-s], summed exactly."""
    out: dict[CellKey, dict[Pair, list]] = {}
    for c in cells:
        pairs = out.setdefault(cell_key(c), {})
        sums = pairs.get((c.team, c.price_class))
        if sums is None:
            pairs[(c.team, c.price_class)] = [c.cluster, [c.gpu_seconds], [c.used_gpu_seconds], [c.mig_seconds]]
        else:
            sums[1].append(c.gpu_seconds)
            sums[2].append(c.used_gpu_seconds)
            sums[3].append(c.mig_seconds)
    return {k: {p: [v[0], fsum(v[1]), fsum(v[2]), fsum(v[3])] for p, v in sorted(pairs.items())}
            for k, pairs in out.items()}


def _sign(diff) -> int:
    """+1 a pair grew, -1 it shrank, 0 unchanged: the first of its GPU, used and MIG seconds that moved."""
    for v in diff:
        if abs(v) > SECONDS_EPSILON:
            return 1 if v > 0 else -1
    return 0


def delta_cells(live, baseline) -> list[Cell]:
    """Live usage minus what a closed month's statement carries (late or re-ingested data), as
    cells to book (docs/accounting.md, "Late data for a closed month").

    Compared per day key (cluster, namespace, model, profile, day) — team and price class are
    what the close booked the key's hours under, not part of what is compared, so a team move,
    a label-trust switch or a node-pool edit after the close moves nothing:
    - every (team, class) of the key grew or stayed (or every one shrank or stayed): hours only
      arrived (or only vanished); each is measured against its own frozen hours;
    - some grew and others shrank: hours moved between them, which a closed month ignores; only
      the key's net difference is late, booked to the frozen (team, class) with the most frozen
      GPU-seconds that day (ties: team, then class, by name).
    The result does not depend on the order cells are read in.
    """
    base, now = _by_pair(baseline), _by_pair(live)
    out = []
    for k in sorted(set(base) | set(now)):
        frozen, read = base.get(k, {}), now.get(k, {})
        diffs = {}
        for pair in sorted(set(frozen) | set(read)):
            f, r = frozen.get(pair), read.get(pair)
            cluster = (r or f)[0]
            diffs[pair] = (cluster, *((r[i] if r else 0.0) - (f[i] if f else 0.0) for i in (1, 2, 3)))
        signs = {_sign(d[1:]) for d in diffs.values()}
        if 1 in signs and -1 in signs:
            anchor = min(frozen, key=lambda p: (-frozen[p][1], p))
            net = tuple(fsum(d[i] for d in diffs.values()) for i in (1, 2, 3))
            diffs = {anchor: (frozen[anchor][0], *net)}
        for (team, price_class), (cluster, g, u, m) in diffs.items():
            d = Cell(cluster_id=k[0], cluster=cluster, namespace=k[1], team=team, gpu_model=k[2],
                          mig_profile=k[3], price_class=price_class, day=k[4], gpu_seconds=g,
                          used_gpu_seconds=u, mig_seconds=m)
            if _nonzero(d):
                out.append(d)
    return out


def _nonzero(c: Cell) -> bool:
    return any(abs(v) > SECONDS_EPSILON for v in (c.gpu_seconds, c.used_gpu_seconds, c.mig_seconds))
