"""Straight-line ``factor_d`` / ``solve_d``: Phi_d's small diagonal blocks, generated.

The velocity and acceleration levels of the generated kinematics (thesis eqs. 2.26-2.27) and of
the general embedded dynamics solve Phi_d x_d = r, where Phi_d is block lower-triangular in the
plan's order: one diagonal block per loop or leg, coupled only to earlier blocks' unknowns.
When every block has at most :data:`MAX_BLOCK` unknowns, the module gets this code instead of
the LU loops over index arrays (``kernels._BLOCK_LU``):

* ``factor_d(J, W)``: per block, det Phi_dk and Phi_dk^-1 as its adjugate over the determinant,
  with Phi_dk's structural zeros left out (the blockwise dynamics' per-leg inverse, see
  :mod:`.blockwise`); False if a block is singular (|det| not within 1e-300..1e300, or NaN);
* ``solve_d(J, W, R, X)``: block forward substitution, x_k = Phi_dk^-1 (r_k - sum of the
  couplings to earlier unknowns), as statements at fixed indices.

On the Stephenson-III six-bar (two 2 x 2 blocks, four couplings) one right-hand side took
64-71 ns with the loops from a compiled caller, 18 ns with this code.
"""
from __future__ import annotations

import sympy as sp

from .codegen import _printer

MAX_BLOCK = 3


def block_solve_source(rows, cols, ptr, nonzero) -> str | None:
    """Source of ``dep_workspace``, ``factor_d``, ``solve_d`` for Phi_d's blocks (``rows`` /
    ``cols``: equations and unknowns in plan block order, block k at ``ptr[k]:ptr[k + 1]``;
    ``nonzero(row, col)``: Phi_q's structure), or None if a block is larger than MAX_BLOCK."""
    blocks = [range(ptr[k], ptr[k + 1]) for k in range(len(ptr) - 1)]
    if not blocks or max(len(b) for b in blocks) > MAX_BLOCK:
        return None
    factor, solve = [], []
    for k, blk in enumerate(blocks):
        s0 = blk.start
        d = sp.Matrix(len(blk), len(blk), lambda a, b: sp.Symbol(
            f"j_{rows[s0 + a]}_{cols[s0 + b]}") if nonzero(rows[s0 + a], cols[s0 + b]) else 0)
        adj = d.adjugate()
        factor.append(f"    # block {k}: equations {[rows[a] for a in blk]}, unknowns "
                      f"{[cols[a] for a in blk]}")
        factor += [f"    {s} = J[{s.name[2:].replace('_', ', ')}]"
                   for s in sorted(d.free_symbols, key=str)]
        factor += [f"    det = {_printer.doprint(d.det(method='berkowitz'))}",
                   "    if not 1e-300 < abs(det) < 1e300:",
                   "        return False",
                   "    inv = 1.0 / det"]
        factor += [f"    DI[{s0 + a}, {b}] = ({_printer.doprint(adj[a, b])}) * inv"
                   for a in range(len(blk)) for b in range(len(blk)) if adj[a, b] != 0]
        for a in blk:        # r_a minus the couplings to every earlier block's unknowns
            terms = [f"J[{rows[a]}, {cols[c]}] * x{c}" for c in range(s0)
                     if nonzero(rows[a], cols[c])]
            solve.append(f"        r{a} = " + " - ".join([f"R[{rows[a]}, m]"] + terms))
        for a in blk:
            terms = [f"DI[{a}, {b - s0}] * r{b}" for b in blk if adj[a - s0, b - s0] != 0]
            solve += [f"        x{a} = " + (" + ".join(terms) or "0.0"),
                      f"        X[{cols[a]}, m] = x{a}"]
    return f'''
@njit(cache=True)
def dep_workspace():
    """(Phi_d's diagonal blocks inverted, row by row in plan block order,) for factor_d /
    solve_d (kinedyn.symbolic.blocksolve)."""
    return (np.zeros((NC_, {MAX_BLOCK})),)


@njit(cache=True)
def factor_d(J, W):
    """Each diagonal block of Phi_d inverted (adjugate / determinant); False if one is
    singular."""
    DI = W[0]
{chr(10).join(factor)}
    return True


@njit(cache=True)
def solve_d(J, W, R, X):
    """Phi_d X_d = R for the columns of R (by constraint; X by coordinate, only the rows DEP
    written), block by block in the plan's order (factor_d first)."""
    DI = W[0]
    for m in range(R.shape[1]):
{chr(10).join(solve)}
'''
