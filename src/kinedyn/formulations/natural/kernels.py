"""Compiled kernels of the natural-coordinate formulation (protocol implementations).

Every equation is one of three kinds over up to three entities ``e = c + sum (a I + b J) x_b``
(see :mod:`.entities`, :mod:`.layout`):

* LINEAR ``e0[k] - f(t)``                      gradient e_k
* DOT    ``e0 . e1 - f(t)``                    gradients e1, e0
* ANGLE  ``S e0 . e1 - C T`` with S = sin(theta(t)), C = cos(theta(t)) and T = e0 x e1 (2-D) or
  (e0 x e1) . e2 (3-D): zero when the angle from e0 to e1 (about e2) is theta(t).

gamma = -(phi_q qd)_q qd - 2 phi_qt qd - phi_tt is exact for each kind (see :func:`_gamma_w`).

Performance notes (measured, see :mod:`kinedyn._unmanaged`): the protocol kernels are inlined
into their callers and their helpers receive plain arrays - a real call that receives the
NamedTuples copies and reference-counts every member, which cost more than the arithmetic.
Entity values are computed once per call: all of them in a straight loop when the requested
rows are most of the equations, else lazily for the entities the rows need (``stamp`` marks
them, see :func:`_prepare`), so the cost of a group of rows is proportional to the group. All
functions of time are computed once per time value (``fval``), as one register program.

The dimension is a run-time value of the data (``data.dim``), so planar and spatial models share
every kernel that calls these (one whole-run kernel per method, not one per method and
dimension). The loop workers still get it at compile time: each wrapper branches on
``data.dim`` and hands the worker the tuple ``_DIMS2`` or ``_DIMS3``, whose length is the
dimension, so each worker is compiled once per dimension with its d-loops unrolled (a run-time d
made the Stewart platform's phi about 4x slower) and a real call to it costs the same.

A fixed set of rows (a :class:`~.data.RowSet`: a kinematic plan's, a dynamics method's) usually
carries straight-line code generated for it (:mod:`.codegen`); Phi with Phi_q, Phi_q alone, Phi,
Phi_t and gamma then run that code (same arithmetic, about 8x faster) and the loops here serve
row arrays and sets without code.
"""
from __future__ import annotations

import numba as nb
import numpy as np
from numba.core import types as types_nb

from ..._jit import INLINED, INLINED_WORKER, WORKER, overload_inlined
from ..._llvm import c_float64, call
from ...model.tape_codegen import functions_at
from ...model.user_forces import OK as USER_FORCE_OK
from ...model.user_forces import UserForceFailure
from .. import protocol
from .codegen import GAMMA, PHI, PHI_JAC, PHI_T
from .data import NaturalData

LINEAR, DOT, ANGLE = 0, 1, 2
# Workers with loops, receiving plain arrays: a real call. The dynamics and the kinematics
# evaluate their rows through generated code (a RowSet's, see codegen), so the loops serve row
# arrays, sets without code and KINEDYN_NATURAL_CODEGEN=0. (Gamma and the Jacobian alone were
# inlined by LLVM while the index-1 dynamics ran the loops: a real call handing over ~25 arrays
# cost more than a small model's arithmetic, double pendulum 2.14 -> 0.88 us per RK4 step.)
_WORKER = WORKER  # without reference counting (kinedyn._jit)
_WRAP = dict(cache=True, nogil=True, inline="always")    # loop-free wrappers unpacking tuples
_LEAF = INLINED                                         # tiny leaf helpers called per row
# the dimension as the length of a tuple, for the workers (see the module's docstring)
_DIMS2, _DIMS3 = (0, 0), (0, 0, 0)


@nb.njit(**_WRAP)
def _in_dim(worker, dim, args):
    """``worker(dims, *args)`` with ``len(dims) == dim``: the worker's machine code for the
    data's dimension (compiled once per dimension, its d-loops unrolled)."""
    if dim == 2:
        worker(_DIMS2, *args)
    else:
        worker(_DIMS3, *args)


@nb.njit(**_LEAF)
def _dot(a, i, b, j, d):
    """a[i] . b[j] for 2-D scratch arrays (rows are indexed, never sliced)."""
    s = 0.0
    for k in range(d):
        s += a[i, k] * b[j, k]
    return s


@nb.njit(**_LEAF)
def _triple(a, i, b, j, c, k, d):
    """2-D: a[i] x b[j] (c unused); 3-D: (a[i] x b[j]) . c[k]."""
    if d == 2:
        return a[i, 0] * b[j, 1] - a[i, 1] * b[j, 0]
    return ((a[i, 1] * b[j, 2] - a[i, 2] * b[j, 1]) * c[k, 0]
            + (a[i, 2] * b[j, 0] - a[i, 0] * b[j, 2]) * c[k, 1]
            + (a[i, 0] * b[j, 1] - a[i, 1] * b[j, 0]) * c[k, 2])


@nb.njit(**_LEAF)
def _entity(ent_start, ent_block, ent_alpha, ent_beta, d, e, x, out, s):
    """out[s] = sum_t (alpha I + beta J) x_block over the terms of entity e."""
    v0 = v1 = v2 = 0.0
    for t in range(ent_start[e], ent_start[e + 1]):
        o = d * ent_block[t]
        a = ent_alpha[t]
        if d == 2:
            b = ent_beta[t]
            v0 += a * x[o] - b * x[o + 1]
            v1 += a * x[o + 1] + b * x[o]
        else:
            v0 += a * x[o]
            v1 += a * x[o + 1]
            v2 += a * x[o + 2]
    out[s, 0] = v0
    out[s, 1] = v1
    if d == 3:
        out[s, 2] = v2


@nb.njit(**_WRAP)
def _time(data, work, t):
    """Fill work.fval with every function of time at t, unless it already holds time t with
    the inputs' current generation (``data.fp_input[0]``, :class:`~kinedyn.model.tape.
    TapeTable`): the table is a function of t and the inputs, so the kernels of one evaluation
    (forces, phi, phi_q, phi_t, gamma) share it."""
    # the "already at t" test inline: a call that passed the nine arrays cost ~30 ns
    if work.ftime[0] != t or work.ftime[1] != data.fp_input[0]:
        functions_at(data.fp_op, data.fp_arg, data.fp_a, data.fp_b, data.fp_out, data.fp_code,
                     data.fp_input, work.freg, work.fval, t)
        work.ftime[0] = t
        work.ftime[1] = data.fp_input[0]


@nb.njit(**_LEAF)
def _f(fval, fid, order):
    return fval[fid, order] if fid >= 0 else 0.0


@nb.njit(**_LEAF)
def _cache_entity(E, d, e, x, with_const):
    con_ent, ent_const, ent_start, ent_block, ent_alpha, ent_beta, cache, stamp, n_con = E
    _entity(ent_start, ent_block, ent_alpha, ent_beta, d, e, x, cache, e)
    if with_const:
        for k in range(d):
            cache[e, k] += ent_const[e, k]


@nb.njit(**_LEAF)
def _prepare(E, d, rows, ents, listed, x, with_const):
    """Entity values (or rates, without constants) for a call on ``rows``; returns ``lazy``.

    ``E`` is the tuple of entity arrays (con_ent, ent_const, ent_start, ent_block, ent_alpha,
    ent_beta, cache, stamp, n_con_ent), ``d`` the dimension. The entities are computed here in
    one straight loop, and ``cache[e]`` holds them, when the call lists them (``listed``: a
    :class:`~.data.RowSet`, ``ents``) or when the rows are at least half of all equations (every
    entity the equations read: ids below ``n_con_ent``; the others are outputs and loads).
    Otherwise (a plain array of a few rows) they are computed on demand by :func:`_ensure`,
    each once per call, so the cost stays proportional to the rows. The straight loop avoids a
    test per entity use, which cost more than the arithmetic (Stewart platform, 102 equations:
    1.8 -> 0.6 us for phi). Listed, a group pays for its own entities only: the Stewart
    platform's converged run group by group 12.1 -> 9.4 us per step (global 9.1), and
    scissor-platform-22x4's paper step on two threads, each with half of the legs (half of the
    equations: the straight loop over every entity), 80 -> 56.5 us.
    """
    if listed:
        for i in range(ents.shape[0]):
            _cache_entity(E, d, ents[i], x, with_const)
        return False
    if 2 * rows.shape[0] < E[0].shape[0]:
        return True
    for e in range(E[8]):
        _cache_entity(E, d, e, x, with_const)
    return False


def _split(rows):
    """``(rows, ents, listed)`` of a row selection: a :class:`~.data.RowSet` or a row array."""


@overload_inlined(_split, jit_options=protocol.JIT)
def _ov_split(rows):
    if isinstance(rows, types_nb.Array):
        return lambda rows: (rows, rows, False)
    return lambda rows: (rows.rows, rows.ents, True)


def _coded(data, rows, slot, arrays):
    """Run the row set's generated function ``slot`` (:mod:`.codegen`) on the coefficients
    ``data.coef`` and ``arrays``: True; or False when there is none (a plain row array, no code
    for the set, an array that is not C-contiguous float64): the caller runs the loops."""


@overload_inlined(_coded, jit_options=protocol.JIT)
def _ov_coded(data, rows, slot, arrays):
    if isinstance(rows, types_nb.Array) or not all(c_float64(a) for a in arrays.types):
        return lambda data, rows, slot, arrays: False
    zeros = (0,) * (len(arrays.types) + 1)

    def impl(data, rows, slot, arrays):
        address = rows.code[slot]
        if address == 0:
            return False
        call(address, (data.coef,) + arrays, zeros, ())
        return True
    return impl


@nb.njit(**_LEAF)
def _ensure(E, d, r, x, with_const, mark):
    """Lazy mode: compute the entities of row r that this call (``mark``) has not yet
    computed (``stamp[e] == mark`` once ``cache[e]`` holds entity e)."""
    con_ent, stamp = E[0], E[7]
    for s in range(3):
        e = con_ent[r, s]
        if e < 0:
            break
        if stamp[e] != mark:
            stamp[e] = mark
            _cache_entity(E, d, e, x, with_const)


@nb.njit(**_WRAP)
def _ents(data, work, cache, stamp):
    """The entity tuple for :func:`_prepare` (arrays only: cheap to pass to a worker)."""
    return (data.con_ent, data.ent_const, data.ent_start, data.ent_block, data.ent_alpha,
            data.ent_beta, cache, stamp, data.n_con_ent)


@nb.njit(**_WRAP)
def _next_mark(work):
    work.counter[0] += 1
    return work.counter[0]


@nb.njit(**_LEAF)
def _angle_gradient(S, C, ev, g, d):
    """Gradients of S e0.e1 - C T w.r.t. e0, e1 (and e2 in 3-D) into g."""
    if d == 2:
        g[0, 0] = S * ev[1, 0] - C * ev[1, 1]
        g[0, 1] = S * ev[1, 1] + C * ev[1, 0]
        g[1, 0] = S * ev[0, 0] + C * ev[0, 1]
        g[1, 1] = S * ev[0, 1] - C * ev[0, 0]
    else:
        g[0, 0] = S * ev[1, 0] - C * (ev[1, 1] * ev[2, 2] - ev[1, 2] * ev[2, 1])
        g[0, 1] = S * ev[1, 1] - C * (ev[1, 2] * ev[2, 0] - ev[1, 0] * ev[2, 2])
        g[0, 2] = S * ev[1, 2] - C * (ev[1, 0] * ev[2, 1] - ev[1, 1] * ev[2, 0])
        g[1, 0] = S * ev[0, 0] - C * (ev[2, 1] * ev[0, 2] - ev[2, 2] * ev[0, 1])
        g[1, 1] = S * ev[0, 1] - C * (ev[2, 2] * ev[0, 0] - ev[2, 0] * ev[0, 2])
        g[1, 2] = S * ev[0, 2] - C * (ev[2, 0] * ev[0, 1] - ev[2, 1] * ev[0, 0])
        g[2, 0] = -C * (ev[0, 1] * ev[1, 2] - ev[0, 2] * ev[1, 1])
        g[2, 1] = -C * (ev[0, 2] * ev[1, 0] - ev[0, 0] * ev[1, 2])
        g[2, 2] = -C * (ev[0, 0] * ev[1, 1] - ev[0, 1] * ev[1, 0])


# ---- protocol implementations ------------------------------------------------------------------
# Each is a loop-free wrapper (inlined into the generic caller) that hands plain arrays to a
# compiled worker; see kinedyn._unmanaged for why tuples never cross a real call.

@nb.njit(**_WORKER)
def _phi_jac_w(dims, E, mark, con_kind, con_comp, con_value, con_fn, indptr, jc_start, jc_slot,
               jc_term, jc_pos, jc_first, jac_const, ent_alpha, ent_beta, fval, ev, g, q, rows,
               ents, listed, phi, values, want_phi, want_jac):
    """phi (``want_phi``) and/or the Jacobian entries (``want_jac``) of the given rows, in one
    pass: both read the same entity values."""
    con_ent, d, V = E[0], len(dims), E[6]
    lazy = _prepare(E, d, rows, ents, listed, q, True)
    for i in range(rows.shape[0]):
        r = rows[i]
        kind = con_kind[r]
        if kind == LINEAR and not want_phi:
            for p in range(indptr[r], indptr[r + 1]):
                values[p] = jac_const[p]
            continue
        if lazy:
            _ensure(E, d, r, q, True, mark)
        e0, e1, e2 = con_ent[r, 0], con_ent[r, 1], con_ent[r, 2]
        if want_phi:
            f0 = _f(fval, con_fn[r, 0], 0)
            if kind == LINEAR:
                phi[i] = V[e0, con_comp[r]] - con_value[r] - f0
            elif kind == DOT:
                phi[i] = _dot(V, e0, V, e1, d) - con_value[r] - f0
            else:
                phi[i] = f0 * _dot(V, e0, V, e1, d) - _f(fval, con_fn[r, 1], 0) * _triple(
                    V, e0, V, e1, V, e2, d)
        if not want_jac:
            continue
        if kind == LINEAR:  # constant rows
            for p in range(indptr[r], indptr[r + 1]):
                values[p] = jac_const[p]
            continue
        if kind == DOT:
            for k in range(d):
                g[0, k] = V[e1, k]
                g[1, k] = V[e0, k]
        else:
            for s in range(d):  # 2-D: two entities
                e = con_ent[r, s]
                if e >= 0:
                    for k in range(d):
                        ev[s, k] = V[e, k]
            _angle_gradient(_f(fval, con_fn[r, 0], 0), _f(fval, con_fn[r, 1], 0), ev, g, d)
        for c in range(jc_start[r], jc_start[r + 1]):  # block b gets (alpha I + beta J)^T g_s
            s = jc_slot[c]
            term = jc_term[c]
            p = jc_pos[c]
            a = ent_alpha[term]
            b = ent_beta[term] if d == 2 else 0.0
            v0 = a * g[s, 0] + b * g[s, 1]
            v1 = a * g[s, 1] - b * g[s, 0]
            if jc_first[c]:  # every entry of the row is some block's: no zeroing needed
                values[p] = v0
                values[p + 1] = v1
                if d == 3:
                    values[p + 2] = a * g[s, 2]
            else:
                values[p] += v0
                values[p + 1] += v1
                if d == 3:
                    values[p + 2] += a * g[s, 2]


@nb.njit(**_WRAP)
def _phi_jac_args(data, work, q, t, rows, phi, values, want_phi, want_jac):
    """The arguments of :func:`_phi_jac_w` but its first (after updating the time functions)."""
    _time(data, work, t)
    rows, ents, listed = _split(rows)
    return (_ents(data, work, work.ent, work.stamp), _next_mark(work), data.con_kind,
            data.con_comp, data.con_value, data.con_fn, data.jac_indptr, data.jc_start,
            data.jc_slot, data.jc_term, data.jc_pos, data.jc_first, data.jac_const, data.ent_alpha,
            data.ent_beta, work.fval, work.ev, work.g, q, rows, ents, listed, phi, values,
            want_phi, want_jac)


@nb.njit(**_WRAP)
def natural_phi(data, work, q, t, rows, phi):
    _time(data, work, t)
    if not _coded(data, rows, PHI, (q, work.fval, phi)):
        _in_dim(_phi_jac_w, data.dim,
                _phi_jac_args(data, work, q, t, rows, phi, work.nothing, True, False))


@nb.njit(**_WRAP)
def natural_phi_q(data, work, q, t, rows, values):
    # the code of Phi with Phi_q, its Phi into scratch: a few operations per row more than a
    # Jacobian of its own would take, and one function less to compile per row set
    _time(data, work, t)
    if not _coded(data, rows, PHI_JAC, (q, work.fval, work.phi, values)):
        _in_dim(_phi_jac_w, data.dim,
                _phi_jac_args(data, work, q, t, rows, work.nothing, values, False, True))


@nb.njit(**_WRAP)
def natural_phi_and_phi_q(data, work, q, t, rows, phi, values):
    _time(data, work, t)
    if not _coded(data, rows, PHI_JAC, (q, work.fval, phi, values)):
        _in_dim(_phi_jac_w, data.dim,
                _phi_jac_args(data, work, q, t, rows, phi, values, True, True))


@nb.njit(**_WORKER)
def _phi_t_w(dims, E, mark, con_kind, con_fn, fval, q, rows, out):
    """Phi_t: -f' (LINEAR, DOT); S' e0.e1 - C' T (ANGLE, the only rows that read entities)."""
    con_ent, d, V = E[0], len(dims), E[6]
    for i in range(rows.shape[0]):
        r = rows[i]
        f1 = _f(fval, con_fn[r, 0], 1)
        if con_kind[r] != ANGLE:
            out[i] = -f1
        else:
            _ensure(E, d, r, q, True, mark)
            e0, e1, e2 = con_ent[r, 0], con_ent[r, 1], con_ent[r, 2]
            out[i] = f1 * _dot(V, e0, V, e1, d) - _f(fval, con_fn[r, 1], 1) * _triple(
                V, e0, V, e1, V, e2, d)


@nb.njit(**_WRAP)
def natural_phi_t(data, work, q, t, rows, out):
    _time(data, work, t)
    if _coded(data, rows, PHI_T, (q, work.fval, out)):
        return
    _in_dim(_phi_t_w, data.dim, (_ents(data, work, work.ent, work.stamp), _next_mark(work),
                                 data.con_kind, data.con_fn, work.fval, q, _split(rows)[0], out))


@nb.njit(**_WORKER)
def _gamma_w(dims, E, Ed, mark, con_kind, con_fn, fval, q, qd, rows, ents, listed, out):
    """gamma per row.

    LINEAR: f''. DOT: -2 e0'.e1' + f''. ANGLE (Phi = S D - C T, D = e0.e1):
    -(S'' D + 2 S' D' + 2 S e0'.e1' - C'' T - 2 C' T' - C T''_v), where T''_v is the part of T''
    without second derivatives: 2 e0' x e1' (2-D) or 2[(e0'xe1').e2 + (e0'xe1).e2' + (e0xe1').e2']
    (3-D). Entity rates from ``Ed`` (all at once or lazily, see :func:`_prepare`); entity values
    only for ANGLE rows, lazily.
    """
    con_ent, d, V, W = E[0], len(dims), E[6], Ed[6]
    lazy = _prepare(Ed, d, rows, ents, listed, qd, False)
    for i in range(rows.shape[0]):
        r = rows[i]
        kind = con_kind[r]
        f2 = _f(fval, con_fn[r, 0], 2)
        if kind == LINEAR:
            out[i] = f2
            continue
        if lazy:
            _ensure(Ed, d, r, qd, False, mark)
        a, b, c = con_ent[r, 0], con_ent[r, 1], con_ent[r, 2]
        if kind == DOT:
            out[i] = -2.0 * _dot(W, a, W, b, d) + f2
            continue
        _ensure(E, d, r, q, True, mark)
        S, S1, S2 = fval[con_fn[r, 0], 0], fval[con_fn[r, 0], 1], f2
        C, C1, C2 = fval[con_fn[r, 1], 0], fval[con_fn[r, 1], 1], fval[con_fn[r, 1], 2]
        D = _dot(V, a, V, b, d)
        Dd = _dot(W, a, V, b, d) + _dot(V, a, W, b, d)
        T = _triple(V, a, V, b, V, c, d)
        if d == 2:
            Td = _triple(W, a, V, b, V, c, d) + _triple(V, a, W, b, V, c, d)
            Tv = 2.0 * _triple(W, a, W, b, V, c, d)
        else:
            Td = (_triple(W, a, V, b, V, c, d) + _triple(V, a, W, b, V, c, d)
                  + _triple(V, a, V, b, W, c, d))
            Tv = 2.0 * (_triple(W, a, W, b, V, c, d) + _triple(W, a, V, b, W, c, d)
                        + _triple(V, a, W, b, W, c, d))
        out[i] = -(S2 * D + 2.0 * S1 * Dd + 2.0 * S * _dot(W, a, W, b, d)
                   - C2 * T - 2.0 * C1 * Td - C * Tv)


@nb.njit(**_WRAP)
def natural_gamma(data, work, q, qd, t, rows, out):
    _time(data, work, t)
    if _coded(data, rows, GAMMA, (q, qd, work.fval, out)):
        return
    rows, ents, listed = _split(rows)
    _in_dim(_gamma_w, data.dim, (_ents(data, work, work.ent, work.stamp),
                                 _ents(data, work, work.entd, work.stampd), _next_mark(work),
                                 data.con_kind, data.con_fn, work.fval, q, qd, rows, ents, listed,
                                 out))


@nb.njit(**_WRAP)
def natural_mass(data, work, q, values):
    _copy(data.mass_values, values)


@nb.njit(**INLINED_WORKER)
def _copy(src, dst):
    for i in range(src.shape[0]):  # (``dst[:] = src`` needs reference counting: an overlap copy)
        dst[i] = src[i]


@nb.njit(**_LEAF)
def _scatter_force(ent_start, ent_block, ent_alpha, ent_beta, d, e, g, s, out):
    """out += gradient map of entity e applied to the world vector g[s] (generalised force)."""
    for t in range(ent_start[e], ent_start[e + 1]):
        o = d * ent_block[t]
        a = ent_alpha[t]
        if d == 2:
            b = ent_beta[t]
            out[o] += a * g[s, 0] + b * g[s, 1]
            out[o + 1] += a * g[s, 1] - b * g[s, 0]
        else:
            out[o] += a * g[s, 0]
            out[o + 1] += a * g[s, 1]
            out[o + 2] += a * g[s, 2]


@nb.njit(**_LEAF)
def _entity_value(ent_const, ent_start, ent_block, ent_alpha, ent_beta, d, e, q, out, s):
    _entity(ent_start, ent_block, ent_alpha, ent_beta, d, e, q, out, s)
    for k in range(d):
        out[s, k] += ent_const[e, k]


@nb.njit(**_WORKER)
def _forces_w(dims, ec, es, eb, ea, ebt, gravity_q, pf_ent, pf_fn, pf_frame, pf_axes, sp_ent,
              sp_k, sp_c, sp_l0, sp_fn, jf_ent, jf_kind, jf_fn, uf_code, uf_start, uf_ent, up, uv,
              uo, fval, ev, ed, g, q, qd, t, out):
    """Q = gravity + point forces + spring-dampers (+ actuators) + joint forces + user
    forces."""
    d = len(dims)
    _copy(gravity_q, out)
    for i in range(pf_ent.shape[0]):
        for k in range(d):
            g[2, k] = _f(fval, pf_fn[i, k], 0)
        if pf_frame[i] == 1:  # body axes: F_world = sum_a F_a axis_a
            for k in range(d):
                g[1, k] = 0.0
            for a in range(d):
                _entity_value(ec, es, eb, ea, ebt, d, pf_axes[i, a], q, ev, 0)
                for k in range(d):
                    g[1, k] += g[2, a] * ev[0, k]
            _scatter_force(es, eb, ea, ebt, d, pf_ent[i], g, 1, out)
        else:
            _scatter_force(es, eb, ea, ebt, d, pf_ent[i], g, 2, out)
    for i in range(sp_ent.shape[0]):  # spring-dampers along the line a -> b
        e = sp_ent[i]
        _entity_value(ec, es, eb, ea, ebt, d, e, q, ev, 0)
        _entity(es, eb, ea, ebt, d, e, qd, ed, 0)
        length = np.sqrt(_dot(ev, 0, ev, 0, d))
        if length < 1e-12:
            continue
        rate = _dot(ev, 0, ed, 0, d) / length
        f = sp_k[i] * (length - sp_l0[i]) + sp_c[i] * rate - _f(fval, sp_fn[i], 0)
        for k in range(d):
            g[0, k] = -f * ev[0, k] / length
        _scatter_force(es, eb, ea, ebt, d, e, g, 0, out)  # e = p_b - p_a: pushes b, pulls a
    for i in range(jf_ent.shape[0]):  # joint torques / forces: tau * grad(coordinate)
        tau = _f(fval, jf_fn[i], 0)
        for s in range(3):
            e = jf_ent[i, s]
            if e >= 0:
                _entity_value(ec, es, eb, ea, ebt, d, e, q, ev, s)
        if jf_kind[i] == 0:  # angle = atan2(T, D): grad = (D grad T - T grad D)/(D^2+T^2)
            D = _dot(ev, 0, ev, 1, d)
            T = _triple(ev, 0, ev, 1, ev, 2, d)
            r2 = D * D + T * T
            _angle_gradient(-T / r2, -D / r2, ev, g, d)
            n = 2 if d == 2 else 3
        else:  # displacement = e0 . e1
            for k in range(d):
                g[0, k] = ev[1, k]
                g[1, k] = ev[0, k]
            n = 2
        for s in range(n):
            for k in range(d):
                g[s, k] *= tau
            _scatter_force(es, eb, ea, ebt, d, jf_ent[i, s], g, s, out)
    for i in range(uf_code.shape[0]):  # user forces: world forces on their points
        first, last = uf_start[i], uf_start[i + 1]
        for s in range(first, last):
            _entity_value(ec, es, eb, ea, ebt, d, uf_ent[s], q, ev, 0)
            _entity(es, eb, ea, ebt, d, uf_ent[s], qd, ed, 0)
            for k in range(d):
                up[d * s + k] = ev[0, k]
                uv[d * s + k] = ed[0, k]
        status = call(uf_code[i], (up, uv, uo), (d * first, d * first, d * first), (t,))
        if status != USER_FORCE_OK:
            raise UserForceFailure()
        for s in range(first, last):
            for k in range(d):
                g[0, k] = uo[d * s + k]
            _scatter_force(es, eb, ea, ebt, d, uf_ent[s], g, 0, out)


@nb.njit(**_WRAP)
def natural_forces(data, work, q, qd, t, out):
    if data.pf_ent.shape[0] + data.sp_ent.shape[0] + data.jf_ent.shape[0] + \
            data.uf_code.shape[0] == 0:
        _copy(data.gravity_q, out)  # gravity only: the worker's call (26 arrays) cost 90 ns
    else:
        _time(data, work, t)
        _in_dim(_forces_w, data.dim, (
            data.ent_const, data.ent_start, data.ent_block, data.ent_alpha, data.ent_beta,
            data.gravity_q, data.pf_ent, data.pf_fn, data.pf_frame, data.pf_axes, data.sp_ent,
            data.sp_k, data.sp_c, data.sp_l0, data.sp_fn, data.jf_ent, data.jf_kind, data.jf_fn,
            data.uf_code, data.uf_start, data.uf_ent, work.up, work.uv, work.uo,
            work.fval, work.ev, work.ed, work.g, q, qd, t, out))


_JIT = protocol.JIT


@overload_inlined(protocol.calc_phi, jit_options=_JIT)
def _ov_phi(data, work, q, t, rows, phi):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, t, rows, phi: natural_phi(data, work, q, t, rows, phi)


@overload_inlined(protocol.calc_phi_q, jit_options=_JIT)
def _ov_phi_q(data, work, q, t, rows, values):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, t, rows, values: natural_phi_q(data, work, q, t, rows, values)


protocol.FUSED_PHI_AND_PHI_Q.add(NaturalData)


@overload_inlined(protocol.calc_phi_and_phi_q, jit_options=_JIT)
def _ov_phi_and_phi_q(data, work, q, t, rows, phi, values):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, t, rows, phi, values: natural_phi_and_phi_q(
            data, work, q, t, rows, phi, values)


@overload_inlined(protocol.calc_phi_t, jit_options=_JIT)
def _ov_phi_t(data, work, q, t, rows, out):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, t, rows, out: natural_phi_t(data, work, q, t, rows, out)


@overload_inlined(protocol.calc_gamma, jit_options=_JIT)
def _ov_gamma(data, work, q, qd, t, rows, out):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, qd, t, rows, out: natural_gamma(data, work, q, qd, t, rows, out)


@overload_inlined(protocol.calc_mass, jit_options=_JIT)
def _ov_mass(data, work, q, values):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, values: natural_mass(data, work, q, values)


@overload_inlined(protocol.calc_forces, jit_options=_JIT)
def _ov_forces(data, work, q, qd, t, out):
    if protocol.is_type(data, NaturalData):
        return lambda data, work, q, qd, t, out: natural_forces(data, work, q, qd, t, out)
