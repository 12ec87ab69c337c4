"""Straight-line code for the projected system of the embedded dynamics (thesis eq. 2.28):

    A = B^T M B,    rhs = B^T (F - M z)

with B = dq/dq_i (n x f) and z = B' q_i' + C' the velocity-independent acceleration, written
out as statements: no index arrays read, no scratch arrays zeroed, no loops. Two facts known
when the module is generated remove most of the work:

* M is used through its nonzero pattern only (block diagonal per body or leg in the thesis's
  mixed coordinates: the Gough-Stewart's 24 x 24 M has 45 nonzeros in its upper triangle);
* B's rows of the independent coordinates are the identity and z is zero there, so
  (M B)_{i c} = M_{i, ind c} + sum over dependent j of M_ij B_jc, and A_ab = (M B)_{ind a, b} +
  sum over dependent i of B_ia (M B)_ib.

Every sum is written as a balanced tree: a chain t1 + t2 + ... + t24 waits 24 addition
latencies, the tree five. The loops this replaces (M B and M z through the pattern, then 21 dot
products of length n) took 480 ns of a 2.3 us Gough-Stewart step.

Every array entry is read into a local before the first store and every output is stored at
the end: LLVM cannot tell that A and rhs do not overlap B, M, F or z, and with loads and stores
interleaved its memory analyses over the Gough-Stewart's 1 600 operations took 50 s of a 57-s
compilation (about 3 s in this order, and the step is as fast).
"""
from __future__ import annotations

import re

DECORATOR = "@inlined   # into embedded_rhs (kinedyn.symbolic.codegen)"


def tree_sum(terms: list[str]) -> str:
    """``terms`` added as a balanced tree ("0.0" for none)."""
    if not terms:
        return "0.0"
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({tree_sum(terms[:half])} + {tree_sum(terms[half:])})"


def projection_source(n: int, independent, entries) -> str:
    """Source of ``project(B, z, M, F, A, rhs)`` (A = B^T M B, rhs = B^T (F - M z)) for n
    coordinates of which ``independent`` (in B's column order) are the independent ones;
    ``entries``: (i, j, read) for every nonzero of the symmetric M (both triangles), ``read``
    the expression reading it from the argument ``M`` (e.g. ``"M[3]"`` or ``"M[2, 5]"``)."""
    ind = [int(i) for i in independent]
    col = {c: a for a, c in enumerate(ind)}
    dep = [i for i in range(n) if i not in col]
    row = {i: [] for i in range(n)}
    loads = {}              # array read -> local name, all read before the first store

    def load(read):
        """The local holding ``read`` (``M[2, 5]`` -> ``m_2_5``)."""
        return loads.setdefault(read, re.sub(r"\W+", "_", read).strip("_").lower())

    for i, j, read in entries:
        row[int(i)].append((int(j), read))
    f = len(ind)
    body, stores = [], []
    mb = {}
    for i in range(n):
        # an independent row ind[a] of M B only enters A[a, b] for b >= a (upper triangle)
        for b in range(col.get(i, 0), f):
            terms = [load(m) if j == ind[b] else f"{load(m)} * {load(f'B[{j}, {b}]')}"
                     for j, m in row[i] if j not in col or j == ind[b]]
            if terms:
                mb[i, b] = f"mb{i}_{b}"
                body.append(f"    mb{i}_{b} = {tree_sum(terms)}")
        w = [f"{load(m)} * {load(f'z[{j}]')}" for j, m in row[i] if j not in col]
        fi = load(f"F[{i}]")
        body.append(f"    w{i} = {fi} - {tree_sum(w)}" if w else f"    w{i} = {fi}")
    for a in range(f):
        terms = [f"w{ind[a]}"] + [f"{load(f'B[{i}, {a}]')} * w{i}" for i in dep]
        body.append(f"    r{a} = {tree_sum(terms)}")
        stores.append(f"    rhs[{a}] = r{a}")
        for b in range(a, f):
            terms = ([mb[ind[a], b]] if (ind[a], b) in mb else []) + \
                [f"{load(f'B[{i}, {a}]')} * {mb[i, b]}" for i in dep if (i, b) in mb]
            body.append(f"    a{a}_{b} = {tree_sum(terms)}")
            stores.append(f"    A[{a}, {b}] = a{a}_{b}")
            if b != a:
                stores.append(f"    A[{b}, {a}] = a{a}_{b}")
    lines = [DECORATOR, "def project(B, z, M, F, A, rhs):",
             '    """A = B^T M B and rhs = B^T (F - M z) of eq. 2.28 (generated: '
             'kinedyn.symbolic.projection)."""']
    lines += [f"    {name} = {read}" for read, name in loads.items()]
    return "\n".join(lines + body + stores) + "\n"
