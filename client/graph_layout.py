"""The layered (Sugiyama-style) layout of one graph view: where its boxes and edges go.

`layered_layout(sizes, edges)` places boxes of given sizes top to bottom so that every edge
points down (docs/architecture.md, "Graph views in notebooks"):
- cycles (a while loop's NextIteration -> Merge, or two name scopes that feed each other)
  are broken by a depth-first search; each back edge is laid out reversed and drawn
  upwards, marked in `Layout.back`;
- layers are longest paths from the sources, and a node with no inputs (a constant, a
  variable) moves down to just above its first consumer;
- an edge spanning several layers passes through a dummy point per layer, so it takes part
  in the ordering and bends around the boxes instead of crossing them;
- the order within each layer comes from barycenter sweeps (down and up), keeping the
  order with the fewest crossings;
- x coordinates: each box moves towards the mean of its neighbours, projected (isotonic
  regression) so that the boxes of a layer keep their order and never overlap.
Pure geometry: nothing here knows about graphs, ops or colours.
"""

from __future__ import annotations

import dataclasses

LAYER_GAP = 46     # vertical space between two layers
NODE_GAP = 22      # horizontal space between two boxes of a layer
DUMMY_WIDTH = 6    # the width an edge's bend point takes in its layer
MARGIN = 12


@dataclasses.dataclass
class Layout:
    """Box centres (`positions`), one polyline per edge (`routes`, in the order the edges
    were given, from source to target), the indices of back edges, and the extent."""

    positions: dict
    routes: list
    back: set
    width: float
    height: float


def layered_layout(sizes: dict, edges: list, back_edges=(), sweeps: int = 10) -> Layout:
    """Lay out boxes `sizes` ({id: (width, height)}, in their preferred order) joined by
    `edges` ([(source id, target id)], no self loops) as the module docstring says; the
    edges whose indices are in `back_edges` (a loop's NextIteration -> Merge) are taken
    as back edges before the search looks for more."""
    ids = list(sizes)
    back = set(back_edges)
    back |= _back_edges(ids, [(u, v) for i, (u, v) in enumerate(edges) if i not in back],
                        [i for i in range(len(edges)) if i not in back])
    forward = [(v, u) if i in back else (u, v) for i, (u, v) in enumerate(edges)]
    layer = _layers(ids, forward)
    # every edge becomes a chain of unit-span segments through dummy points
    chains, nodes_of = [], [[] for _ in range(max(layer.values(), default=0) + 1)]
    width = dict((n, sizes[n][0]) for n in ids)
    for n in ids:
        nodes_of[layer[n]].append(n)
    succ = {n: [] for n in ids}
    pred = {n: [] for n in ids}
    for i, (u, v) in enumerate(forward):
        chain = [u]
        for k in range(layer[u] + 1, layer[v]):
            d = ("dummy", i, k)
            width[d] = DUMMY_WIDTH
            nodes_of[k].append(d)
            succ[d], pred[d] = [], []
            chain.append(d)
        chain.append(v)
        for a, b in zip(chain, chain[1:]):
            succ[a].append(b)
            pred[b].append(a)
        chains.append(chain)
    order = _order(nodes_of, succ, pred, sweeps)
    xs = _x_positions(order, width, succ, pred)
    heights = [max((sizes[n][1] for n in row if n in sizes), default=0) for row in order]
    ys, y = [], MARGIN
    for h in heights:
        ys.append(y + h / 2)
        y += h + LAYER_GAP
    left = min((xs[n] - width[n] / 2 for n in xs), default=0)
    shift = MARGIN - left
    pos = {n: (xs[n] + shift, ys[layer[n]] if n in layer else ys[n[2]]) for n in xs}
    routes = []
    for i, chain in enumerate(chains):
        u, v = chain[0], chain[-1]
        pts = [(pos[u][0], pos[u][1] + sizes[u][1] / 2)]
        pts += [pos[d] for d in chain[1:-1]]
        pts.append((pos[v][0], pos[v][1] - sizes[v][1] / 2))
        routes.append(pts[::-1] if i in back else pts)
    right = max((pos[n][0] + width[n] / 2 for n in pos), default=0)
    return Layout({n: pos[n] for n in ids}, routes, back, right + MARGIN,
                  max(y - LAYER_GAP + MARGIN, 2 * MARGIN))


def _back_edges(ids, edges, index) -> set:
    """Indices (`index[k]` for `edges[k]`) of the edges a depth-first search finds pointing
    back to a node on its stack, searching from the sources first, then from the other
    nodes in order: removing them leaves a DAG."""
    out = {n: [] for n in ids}
    has_pred = set()
    for i, (u, v) in zip(index, edges):
        out[u].append((i, v))
        has_pred.add(v)
    state, back = {}, set()   # state: 1 on the stack, 2 done
    for root in [n for n in ids if n not in has_pred] + ids:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            node, it = stack[-1]
            for i, v in it:
                s = state.get(v)
                if s == 1:
                    back.add(i)
                elif s is None:
                    state[v] = 1
                    stack.append((v, iter(out[v])))
                    break
            else:
                state[node] = 2
                stack.pop()
    return back


def _layers(ids, edges) -> dict:
    """Longest-path layers of the DAG `edges`; sources sink to just above their first
    consumer."""
    succ = {n: [] for n in ids}
    indeg = dict.fromkeys(ids, 0)
    for u, v in edges:
        succ[u].append(v)
        indeg[v] += 1
    layer = dict.fromkeys(ids, 0)
    ready = [n for n in ids if indeg[n] == 0]
    topo = []
    while ready:
        n = ready.pop()
        topo.append(n)
        for v in succ[n]:
            layer[v] = max(layer[v], layer[n] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    has_pred = {v for _, v in edges}
    for n in reversed(topo):
        if n not in has_pred and succ[n]:
            layer[n] = min(layer[v] for v in succ[n]) - 1
    return layer


def _order(nodes_of, succ, pred, sweeps) -> list:
    """Each layer's order: barycenter sweeps from a depth-first initial order, keeping the
    best by number of crossings."""
    seen, first = set(), {}
    for row in nodes_of:   # initial order: depth-first from each layer's nodes in turn
        for n in row:
            stack = [n]
            while stack:
                m = stack.pop()
                if m in seen:
                    continue
                seen.add(m)
                first[m] = len(first)
                stack.extend(reversed(succ[m]))
    order = [sorted(row, key=first.__getitem__) for row in nodes_of]
    best, best_cross = [list(r) for r in order], _crossings(order, succ)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        rows = range(1, len(order)) if down else range(len(order) - 2, -1, -1)
        for k in rows:
            ref = order[k - 1] if down else order[k + 1]
            where = {n: i for i, n in enumerate(ref)}
            row = order[k]

            def bary(item, where=where, down=down):
                i, n = item
                near = [where[m] for m in (pred[n] if down else succ[n]) if m in where]
                return (sum(near) / len(near) if near else i, i)
            order[k] = [n for _, n in sorted(enumerate(row), key=bary)]
        cross = _crossings(order, succ)
        if cross < best_cross:
            best, best_cross = [list(r) for r in order], cross
    return best


def _crossings(order, succ) -> int:
    """Edge crossings between consecutive layers (inversions, counted by merge sort)."""
    total = 0
    for k in range(len(order) - 1):
        where = {n: i for i, n in enumerate(order[k + 1])}
        pairs = sorted((i, where[m]) for i, n in enumerate(order[k]) for m in succ[n]
                       if m in where)
        total += _inversions([b for _, b in pairs])
    return total


def _inversions(seq) -> int:
    if len(seq) < 2:
        return 0
    mid = len(seq) // 2
    left, right = seq[:mid], seq[mid:]
    count = _inversions(left) + _inversions(right)
    left.sort()
    right.sort()
    j = 0
    for a in left:   # pairs (a in left, b in right) with a > b
        while j < len(right) and right[j] < a:
            j += 1
        count += j
    return count


def _x_positions(order, width, succ, pred, rounds: int = 16) -> dict:
    """Box centres along each layer: packed, then pulled towards their neighbours."""
    xs = {}
    for row in order:
        x = 0.0
        for n in row:
            xs[n] = x + width[n] / 2
            x += width[n] + NODE_GAP
    for r in range(rounds):
        rows = range(len(order)) if r % 2 == 0 else range(len(order) - 1, -1, -1)
        for k in rows:
            row = order[k]
            desired, weights = [], []
            for n in row:
                dummy = isinstance(n, tuple) and n[:1] == ("dummy",)
                # boxes follow one side per sweep; an edge's bend points both (straight)
                near = pred[n] + succ[n] if dummy or r >= rounds - 2 else \
                    (pred[n] if r % 2 == 0 else succ[n]) or pred[n] + succ[n]
                desired.append(sum(xs[m] for m in near) / len(near) if near else xs[n])
                weights.append((4.0 if dummy else 1.0) if near else 0.2)
            gaps = [(width[a] + width[b]) / 2 + NODE_GAP for a, b in zip(row, row[1:])]
            for n, x in zip(row, _project(desired, weights, gaps)):
                xs[n] = x
    return xs


def _project(desired, weights, gaps) -> list:
    """The closest positions (weighted least squares) to `desired` that keep each gap at
    least `gaps[i]`: the pool-adjacent-violators algorithm on positions minus offsets."""
    offsets = [0.0]
    for g in gaps:
        offsets.append(offsets[-1] + g)
    blocks = []   # [weighted sum, weight, count]
    for d, w, o in zip(desired, weights, offsets):
        blocks.append([(d - o) * w, w, 1])
        while len(blocks) > 1 and (blocks[-2][0] / blocks[-2][1]
                                   > blocks[-1][0] / blocks[-1][1]):
            s, w2, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w2
            blocks[-1][2] += c
    out = []
    for s, w, c in blocks:
        out.extend([s / w] * c)
    return [y + o for y, o in zip(out, offsets)]
