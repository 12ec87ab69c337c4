"""Compiled HDCA passes (Hamiltonian divide-and-conquer, paper section 2), planar, allocation-free.

Conventions. Planar spatial vectors ``V = [v_x, v_y, omega]`` (velocity of a handle point and
angular velocity) and ``T, Q, P = [f_x, f_y, n]`` (impulse / load / momentum with the moment about
the handle), all in world axes. Every chain body ``b`` has handle 1 at its joint ``b`` (towards
the ground) and handle 2 at joint ``b+1``; joint ``k`` joins chain body ``k-1`` ("A" side,
-1 = ground) and body ``k`` ("B" side, ``n_b`` = ground when the loop closes). A joint's motion
and constraint-force subspaces (eq. 8) are ``H = [0, 0, 1]``, ``D = [e_x, e_y]`` (revolute) and
``H = [u, 0]``, ``D = [[-u_y, 0], [u_x, 0], [0, 1]]`` (prismatic along the world unit vector
``u`` fixed in body A): ``D^T H = 0``, ``H^T H = 1``.

The shift of eq. (1) from handle O to a point at ``s`` from it acts as
``S Q = [f; n + (Omega s) . f]`` on loads and ``S^T V = [v + omega (Omega s); omega]`` on
velocities (``Omega`` of eq. 2), so every product with S is written out.

Passes of one state-derivative evaluation (:func:`hdca_derivative`): forward kinematics;
body coefficients xi (eqs. 13-18) and loads (38) per leaf; assembly (27-37, 39) per tree level
upwards; base connection (40-41 open, 42-44 closed, the latter's 4 x 4 eta by LDUP); disassembly
(45-48) per level downwards; joint velocities (49) and momentum derivatives (50-51).
The threaded evaluation (:mod:`.team`) runs the same node functions, split by subtrees over a
team of workers.

Compilation. The node functions are ``INLINED_WORKER``s: compiled once per precision, without
reference counting, and inlined by LLVM into whatever calls them. The range passes over them
(:func:`leaves`, :func:`assemblies`, :func:`evaluate`, ...) are thin and stay inlined at the
Numba IR level, adding no LLVM layer of their own. When every pass was IR-inlined, each kernel
that evaluates the derivative typed and lowered the whole tree again: the HDCA tests compiled
in 426 s from an empty cache, 265 s now, with the same steps (docs/architecture.md).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from ..._jit import INLINED_WORKER
from ..._unmanaged import unmanaged
from ...linalg.inversion import inverse_2x2, ldup_inverse

REVOLUTE, PRISMATIC = 0, 1


class HDCAData(NamedTuple):
    """Compiled chain, tree and inertial data (float arrays all of one dtype).

    n_b bodies, n_j joints (n_b open, n_b + 1 closed), n_node = 2 n_b - 1 tree nodes.
    """
    n_b: int
    n_j: int
    closed: bool
    mass: np.ndarray        # (n_b,)
    inv_mass: np.ndarray    # (n_b,)
    inv_inertia: np.ndarray  # (n_b,) 1 / J_C
    com: np.ndarray         # (n_b, 2) centre of mass, body frame
    jtype: np.ndarray       # (n_j,) REVOLUTE / PRISMATIC
    point_a: np.ndarray     # (n_j, 2) joint point in the A-side body frame (world if ground)
    point_b: np.ndarray     # (n_j, 2) joint point in the B-side body frame (world if ground)
    axis: np.ndarray        # (n_j, 2) prismatic direction in the A-side frame (world if ground)
    offset: np.ndarray      # (n_j,) theta_B - theta_A - q (revolute) / theta_B - theta_A (prismatic)
    gravity: np.ndarray     # (2,)
    left: np.ndarray        # (n_node,) tree (topology.assembly.AssemblyTree)
    right: np.ndarray
    node_joint: np.ndarray
    first: np.ndarray
    last: np.ndarray
    level_ptr: np.ndarray   # (n_level + 1,)
    level_nodes: np.ndarray  # (n_b - 1,)
    height: np.ndarray      # (n_node,) 0 for leaves


class OriginWork(NamedTuple):
    """Scratch of the passes at the world origin (:mod:`.origin`)."""
    s: np.ndarray      # (n_j, 3) joint axes
    I: np.ndarray      # (n_b, 3, 3) body inertias (the dense pass: then composite inertias)
    V: np.ndarray      # (n_b, 3) body velocities
    A: np.ndarray      # (n_b, 3) bias accelerations (the joint accelerations zero)
    F: np.ndarray      # (n_b, 3) rates of the bodies' momenta I V at those accelerations


def make_origin_work(n_b: int, n_j: int, dtype) -> OriginWork:
    return OriginWork(np.zeros((n_j, 3), dtype), np.zeros((n_b, 3, 3), dtype),
                      np.zeros((n_b, 3), dtype), np.zeros((n_b, 3), dtype),
                      np.zeros((n_b, 3), dtype))


class HDCAWork(NamedTuple):
    theta: np.ndarray   # (n_b,) body angles
    origin: np.ndarray  # (n_b, 2) body-frame origins
    cw: np.ndarray      # (n_b, 2) centres of mass, world
    joint: np.ndarray   # (n_j, 2) joint points, world (prismatic: the B-side point)
    H: np.ndarray       # (n_j, 3)
    D: np.ndarray       # (n_j, 3, 2)
    h1: np.ndarray      # (n_node, 2) handle 1 of each node, world
    h2: np.ndarray      # (n_node, 2) handle 2
    xi11: np.ndarray    # (n_node, 3, 3)
    xi12: np.ndarray    # (n_node, 3, 3)   (xi21 = xi12^T, eq. 15 / 29)
    xi22: np.ndarray    # (n_node, 3, 3)
    xi10: np.ndarray    # (n_node, 3)
    xi20: np.ndarray    # (n_node, 3)
    Q1: np.ndarray      # (n_node, 3) accumulated loads at handle 1 (eqs. 38-39)
    EA: np.ndarray      # (n_node, 3, 2) xi12^A D (assembly scratch)
    EB: np.ndarray      # (n_node, 3, 2) xi21^B D
    K: np.ndarray       # (n_node, 2, 2) D^T (xi11^B + xi22^A) D
    C: np.ndarray       # (n_node, 2, 2) eq. 33
    WA: np.ndarray      # (n_node, 2, 3) eq. 35
    WB: np.ndarray      # (n_node, 2, 3) eq. 36
    beta: np.ndarray    # (n_node, 2) eq. 37
    T1: np.ndarray      # (n_node, 3) constraint impulses at the handles
    T2: np.ndarray      # (n_node, 3)
    Qb1: np.ndarray     # (n_node, 3) articulated loads (eqs. 47-48)
    Qb2: np.ndarray     # (n_node, 3)
    V1: np.ndarray      # (n_b, 3) handle velocities
    V2: np.ndarray      # (n_b, 3)
    eta: np.ndarray     # (4, 4) eq. 43
    eta_inv: np.ndarray  # (4, 4)
    ldup: np.ndarray    # (4, 4, 4) LDUP scratch
    piv: np.ndarray     # (4,) int64
    sigma: np.ndarray   # (4,) base-connection multipliers
    q_fk: np.ndarray    # (n_j,) the q of the forward kinematics held (NaN: none, or partial)
    spatial: OriginWork  # the spatial quantities at the world origin (.origin)


def make_work(data: HDCAData) -> HDCAWork:
    nb_, nj = data.n_b, data.n_j
    nn = 2 * nb_ - 1
    dt = data.mass.dtype

    def z(*shape):
        return np.zeros(shape, dt)
    return HDCAWork(z(nb_), z(nb_, 2), z(nb_, 2), z(nj, 2), z(nj, 3), z(nj, 3, 2), z(nn, 2),
                    z(nn, 2), z(nn, 3, 3), z(nn, 3, 3), z(nn, 3, 3), z(nn, 3), z(nn, 3), z(nn, 3),
                    z(nn, 3, 2), z(nn, 3, 2), z(nn, 2, 2), z(nn, 2, 2), z(nn, 2, 3), z(nn, 2, 3),
                    z(nn, 2), z(nn, 3), z(nn, 3), z(nn, 3), z(nn, 3), z(nb_, 3), z(nb_, 3),
                    z(4, 4), z(4, 4), z(4, 4, 4), np.zeros(4, np.int64), z(4),
                    np.full(nj, np.nan, dt), make_origin_work(nb_, nj, dt))


# ---- forward kinematics ---------------------------------------------------------------------------
@nb.njit(**INLINED_WORKER)
def forward_kinematics(data, work, q, lo, hi):
    """Body poses, joint points, handles and subspaces H, D from the joint coordinates (base to
    tip), written for the joints ``lo <= k < hi`` and the bodies ``lo..hi-1`` only (with
    ``hi = n_b`` also the loop-closing joint ``n_b`` and the free tip's handle): the chain is
    still followed from the ground, by the same operations, so the part of a team worker
    (:mod:`.team`) equals the serial pass (``lo, hi = 0, n_b``) bit for bit without waiting for
    the workers before it. Joint ``k`` writes handle 2 of body ``k - 1``. Passes made through
    :func:`kinematics_at` record their ``q``; a caller of this one voids the record."""
    th, ox, oy = 0.0, 0.0, 0.0  # the ground frame
    c, s = 1.0, 0.0
    end = data.n_j if hi == data.n_b else hi
    for k in range(end):
        write = k >= lo
        ground_a = k == 0
        pa = data.point_a[k]
        if ground_a:
            ax, ay = pa[0], pa[1]
            ux, uy = data.axis[k, 0], data.axis[k, 1]
        else:
            ax = ox + c * pa[0] - s * pa[1]
            ay = oy + s * pa[0] + c * pa[1]
            ux = c * data.axis[k, 0] - s * data.axis[k, 1]
            uy = s * data.axis[k, 0] + c * data.axis[k, 1]
        if data.jtype[k] == REVOLUTE:
            th = th + q[k] + data.offset[k]
            rx, ry = ax, ay
        else:
            th = th + data.offset[k]
            rx, ry = ax + ux * q[k], ay + uy * q[k]
        if write:
            H, D = work.H[k], work.D[k]
            D[:, :] = 0.0
            if data.jtype[k] == REVOLUTE:
                H[0], H[1], H[2] = 0.0, 0.0, 1.0
                D[0, 0], D[1, 1] = 1.0, 1.0
            else:
                H[0], H[1], H[2] = ux, uy, 0.0
                D[0, 0], D[1, 0], D[2, 1] = -uy, ux, 1.0
            work.joint[k, 0], work.joint[k, 1] = rx, ry
            if k > 0:
                work.h2[k - 1, 0], work.h2[k - 1, 1] = rx, ry
        if k == data.n_b:  # the loop-closing joint: B is the ground
            break
        c, s = math.cos(th), math.sin(th)
        pb = data.point_b[k]
        ox = rx - (c * pb[0] - s * pb[1])
        oy = ry - (s * pb[0] + c * pb[1])
        if write:
            work.h1[k, 0], work.h1[k, 1] = rx, ry
            work.theta[k] = th
            work.origin[k, 0], work.origin[k, 1] = ox, oy
            cm = data.com[k]
            work.cw[k, 0] = ox + c * cm[0] - s * cm[1]
            work.cw[k, 1] = oy + s * cm[0] + c * cm[1]
    if not data.closed and hi == data.n_b:  # free tip: no joint, no impulse; any point serves
        b = data.n_b - 1                    # as handle 2
        work.h2[b, 0], work.h2[b, 1] = work.cw[b, 0], work.cw[b, 1]


@nb.njit(**INLINED_WORKER)
def kinematics_at(data, work, q):
    """The forward kinematics at ``q`` in ``work``: computed, unless the last whole pass was at
    this very ``q`` (``work.q_fk``, compared entry by entry). Semi-implicit Euler evaluates
    HDCA and its momentum maps twice at each position (docs/hdca.md, "Integrators"); the
    comparison costs about a nanosecond per joint, the pass a sine and a cosine."""
    held = True
    for k in range(data.n_j):
        if work.q_fk[k] != q[k]:  # NaN: never equal
            held = False
            break
    if not held:
        forward_kinematics(data, work, q, 0, data.n_b)
        for k in range(data.n_j):
            work.q_fk[k] = q[k]


# ---- leaves: body coefficients (eqs. 13-18) and loads (eq. 38) ------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def leaf(data, work, b, p):
    """xi of chain body ``b`` between its handles, with the joint momenta p_b (handle 1) and
    -p_(b+1) (handle 2) of eq. (7) folded into xi10, xi20 (eqs. 17-18)."""
    leaf_coefficients(data, work, b)
    leaf_momenta(data, work, b, p)


@nb.njit(**INLINED_WORKER)
def leaf_coefficients(data, work, b):
    """The position-dependent part of :func:`leaf`: xi11, xi12, xi22 (eqs. 13-16), load Q1."""
    mi, ji = data.inv_mass[b], data.inv_inertia[b]
    x1, y1 = work.h1[b, 0], work.h1[b, 1]
    wx, wy = -(work.cw[b, 1] - y1), work.cw[b, 0] - x1         # w = Omega s_1C
    zx, zy = -(work.h2[b, 1] - y1), work.h2[b, 0] - x1         # z = Omega s_12
    a = work.xi11[b]                                           # eq. 13: M_1^-1
    a[0, 0] = mi + ji * wx * wx
    a[0, 1] = ji * wx * wy
    a[1, 0] = a[0, 1]
    a[1, 1] = mi + ji * wy * wy
    a[0, 2] = -ji * wx
    a[1, 2] = -ji * wy
    a[2, 0] = a[0, 2]
    a[2, 1] = a[1, 2]
    a[2, 2] = ji
    e = work.xi12[b]                                           # eq. 14: xi11 S_12
    for i in range(3):
        e[i, 0] = a[i, 0] + a[i, 2] * zx
        e[i, 1] = a[i, 1] + a[i, 2] * zy
        e[i, 2] = a[i, 2]
    f = work.xi22[b]                                           # eq. 16: S_12^T xi11 S_12
    for j in range(3):
        f[0, j] = e[0, j] + zx * e[2, j]
        f[1, j] = e[1, j] + zy * e[2, j]
        f[2, j] = e[2, j]
    m = data.mass[b]
    fx, fy = m * data.gravity[0], m * data.gravity[1]                    # eq. 38: S_1C Q_C
    work.Q1[b, 0], work.Q1[b, 1], work.Q1[b, 2] = fx, fy, wx * fx + wy * fy


@nb.njit(**INLINED_WORKER)
def leaf_momenta(data, work, b, p):
    """The momentum-dependent part of :func:`leaf`: xi10, xi20 (eqs. 17-18)."""
    x1, y1 = work.h1[b, 0], work.h1[b, 1]
    zx, zy = -(work.h2[b, 1] - y1), work.h2[b, 0] - x1         # z = Omega s_12
    a = work.xi11[b]
    # g = H_1 p_1 - S_12 H_2 p_2 (eqs. 7, 9, 17)
    H1 = work.H[b]
    g0, g1, g2 = H1[0] * p[b], H1[1] * p[b], H1[2] * p[b]
    if b + 1 < data.n_j:
        H2 = work.H[b + 1]
        p2 = p[b + 1]
        g0 -= H2[0] * p2
        g1 -= H2[1] * p2
        g2 -= (H2[2] + zx * H2[0] + zy * H2[1]) * p2
    for i in range(3):
        work.xi10[b, i] = a[i, 0] * g0 + a[i, 1] * g1 + a[i, 2] * g2       # eq. 17
    v = work.xi10[b]
    work.xi20[b, 0] = v[0] + zx * v[2]                                     # eq. 18: S_12^T xi10
    work.xi20[b, 1] = v[1] + zy * v[2]
    work.xi20[b, 2] = v[2]


# ---- assembly of two (compound) bodies (eqs. 27-37, 39) -------------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def assemble(data, work, c):
    """Node ``c`` from its children: 1 if its C is singular."""
    st = assemble_coefficients(data, work, c)
    if st == 0:
        assemble_momenta(data, work, c)
    return st


@nb.njit(**INLINED_WORKER)
def assemble_coefficients(data, work, c):
    """The position-dependent part of :func:`assemble`: E, C, W (eqs. 33, 35-36), the node's
    xi11, xi12, xi22 (eqs. 27-32), load and handles (eq. 39)."""
    A, B, k = data.left[c], data.right[c], data.node_joint[c]
    D = work.D[k]
    EA, EB = work.EA[c], work.EB[c]
    xa, xb = work.xi12[A], work.xi12[B]
    for i in range(3):       # E_A = xi12^A D, E_B = xi21^B D = (xi12^B)^T D
        for j in range(2):
            EA[i, j] = xa[i, 0] * D[0, j] + xa[i, 1] * D[1, j] + xa[i, 2] * D[2, j]
            EB[i, j] = xb[0, i] * D[0, j] + xb[1, i] * D[1, j] + xb[2, i] * D[2, j]
    K, C = work.K[c], work.C[c]
    s11, s22 = work.xi11[B], work.xi22[A]
    for i in range(2):       # K = D^T (xi11^B + xi22^A) D
        for j in range(2):
            acc = 0.0
            for r in range(3):
                for t in range(3):
                    acc += D[r, i] * (s11[r, t] + s22[r, t]) * D[t, j]
            K[i, j] = acc
    st = inverse_2x2(K, C)   # adjugate method, section 3.1
    if st != 0:
        return st
    for i in range(2):
        for j in range(2):
            C[i, j] = -C[i, j]   # eq. 33
    WA, WB = work.WA[c], work.WB[c]
    for i in range(2):       # eqs. 35-36: W_A = C E_A^T, W_B = C E_B^T
        for j in range(3):
            WA[i, j] = C[i, 0] * EA[j, 0] + C[i, 1] * EA[j, 1]
            WB[i, j] = C[i, 0] * EB[j, 0] + C[i, 1] * EB[j, 1]
    for i in range(3):       # eqs. 27-32 with W_A, W_B
        for j in range(3):
            work.xi11[c, i, j] = work.xi11[A, i, j] + EA[i, 0] * WA[0, j] + EA[i, 1] * WA[1, j]
            work.xi12[c, i, j] = -(EA[i, 0] * WB[0, j] + EA[i, 1] * WB[1, j])
            work.xi22[c, i, j] = work.xi22[B, i, j] + EB[i, 0] * WB[0, j] + EB[i, 1] * WB[1, j]
    zx = -(work.h2[A, 1] - work.h1[A, 1])    # eq. 39: Q1^C = Q1^A + S_12^A Q1^B
    zy = work.h2[A, 0] - work.h1[A, 0]
    qb = work.Q1[B]
    work.Q1[c, 0] = work.Q1[A, 0] + qb[0]
    work.Q1[c, 1] = work.Q1[A, 1] + qb[1]
    work.Q1[c, 2] = work.Q1[A, 2] + qb[2] + zx * qb[0] + zy * qb[1]
    work.h1[c, 0], work.h1[c, 1] = work.h1[A, 0], work.h1[A, 1]
    work.h2[c, 0], work.h2[c, 1] = work.h2[B, 0], work.h2[B, 1]
    return 0


@nb.njit(**INLINED_WORKER)
def assemble_momenta(data, work, c):
    """The momentum-dependent part of :func:`assemble`: b, beta (eqs. 34, 37), the node's
    xi10, xi20 (eqs. 27-32)."""
    A, B, k = data.left[c], data.right[c], data.node_joint[c]
    D = work.D[k]
    EA, EB, C = work.EA[c], work.EB[c], work.C[c]
    b0 = b1 = 0.0            # eq. 34: b = D^T (xi10^B - xi20^A)
    for r in range(3):
        d = work.xi10[B, r] - work.xi20[A, r]
        b0 += D[r, 0] * d
        b1 += D[r, 1] * d
    be = work.beta[c]
    for i in range(2):       # eq. 37: beta = C b
        be[i] = C[i, 0] * b0 + C[i, 1] * b1
    for i in range(3):       # eqs. 27-32, beta-hat
        work.xi10[c, i] = work.xi10[A, i] - (EA[i, 0] * be[0] + EA[i, 1] * be[1])
        work.xi20[c, i] = work.xi20[B, i] + (EB[i, 0] * be[0] + EB[i, 1] * be[1])


# ---- base connection (eqs. 40-44) -----------------------------------------------------------------
@nb.njit(**INLINED_WORKER)
def _dtxd(D1, X, D2, out, r0, c0):
    """out[r0:r0+2, c0:c0+2] = D1^T X D2."""
    for i in range(2):
        for j in range(2):
            acc = 0.0
            for r in range(3):
                for t in range(3):
                    acc += D1[r, i] * X[r, t] * D2[t, j]
            out[r0 + i, c0 + j] = acc


@nb.njit(cache=True, nogil=True, inline="always")
def base_connection(data, work):
    """The root's connection to the base: 1 if eta is singular."""
    st = base_coefficients(data, work)
    if st == 0:
        base_momenta(data, work)
    return st


@nb.njit(**INLINED_WORKER)
def base_coefficients(data, work):
    """The position-dependent part of :func:`base_connection`: eta and its inverse (eqs. 40,
    43: 2 x 2 for an open chain, 4 x 4 by LDUP for a closed one)."""
    r = data.left.shape[0] - 1
    D1 = work.D[0]
    _dtxd(D1, work.xi11[r], D1, work.eta, 0, 0)
    if not data.closed:
        return inverse_2x2(work.eta, work.eta_inv)
    D2 = work.D[data.n_b]
    _dtxd(D1, work.xi12[r], D2, work.eta, 0, 2)
    _dtxd(D2, work.xi22[r], D2, work.eta, 2, 2)
    for i in range(2):
        for j in range(2):
            work.eta[2 + i, j] = work.eta[j, 2 + i]   # xi21 = xi12^T
    return ldup_inverse(work.eta, work.eta_inv, work.ldup, work.piv)


@nb.njit(**INLINED_WORKER)
def base_momenta(data, work):
    """The momentum-dependent part of :func:`base_connection`: the multipliers sigma (eqs. 41,
    44) and the root's impulses and loads."""
    r = data.left.shape[0] - 1
    D1 = work.D[0]
    sig, inv = work.sigma, work.eta_inv
    if not data.closed:     # eqs. 40-41: sigma = -(D^T xi11 D)^-1 D^T xi10
        z0 = D1[0, 0] * work.xi10[r, 0] + D1[1, 0] * work.xi10[r, 1] + D1[2, 0] * work.xi10[r, 2]
        z1 = D1[0, 1] * work.xi10[r, 0] + D1[1, 1] * work.xi10[r, 1] + D1[2, 1] * work.xi10[r, 2]
        sig[0] = -(inv[0, 0] * z0 + inv[0, 1] * z1)
        sig[1] = -(inv[1, 0] * z0 + inv[1, 1] * z1)
        sig[2] = 0.0
        sig[3] = 0.0
        D2 = D1
    else:                   # eqs. 42-44: both chain ends on the base
        D2 = work.D[data.n_b]
        for i in range(4):  # sigma = -eta^-1 zeta, zeta = [D1^T xi10; D2^T xi20]
            acc = 0.0
            for j in range(2):
                z1 = D1[0, j] * work.xi10[r, 0] + D1[1, j] * work.xi10[r, 1] + D1[2, j] * work.xi10[r, 2]
                z2 = D2[0, j] * work.xi20[r, 0] + D2[1, j] * work.xi20[r, 1] + D2[2, j] * work.xi20[r, 2]
                acc += inv[i, j] * z1 + inv[i, 2 + j] * z2
            sig[i] = -acc
    for i in range(3):
        work.T1[r, i] = D1[i, 0] * sig[0] + D1[i, 1] * sig[1]
        work.T2[r, i] = D2[i, 0] * sig[2] + D2[i, 1] * sig[3]
        work.Qb1[r, i] = work.Q1[r, i]   # eq. 41
        work.Qb2[r, i] = 0.0


# ---- disassembly (eqs. 45-48) -----------------------------------------------------------------------
@nb.njit(**INLINED_WORKER)
def disassemble(data, work, c):
    A, B, k = data.left[c], data.right[c], data.node_joint[c]
    D = work.D[k]
    WA, WB, be = work.WA[c], work.WB[c], work.beta[c]
    t1, t2 = work.T1[c], work.T2[c]
    s0 = be[0] + WB[0, 0] * t2[0] + WB[0, 1] * t2[1] + WB[0, 2] * t2[2] \
        - (WA[0, 0] * t1[0] + WA[0, 1] * t1[1] + WA[0, 2] * t1[2])
    s1 = be[1] + WB[1, 0] * t2[0] + WB[1, 1] * t2[1] + WB[1, 2] * t2[2] \
        - (WA[1, 0] * t1[0] + WA[1, 1] * t1[1] + WA[1, 2] * t1[2])
    zx = -(work.h2[B, 1] - work.h1[B, 1])
    zy = work.h2[B, 0] - work.h1[B, 0]
    q2 = work.Qb2[c]
    for i in range(3):
        tb = D[i, 0] * s0 + D[i, 1] * s1           # eq. 45
        work.T1[B, i] = tb
        work.T2[A, i] = -tb
        work.T1[A, i] = t1[i]                      # eq. 46
        work.T2[B, i] = t2[i]
        work.Qb1[A, i] = work.Qb1[c, i]            # eq. 48
        work.Qb2[B, i] = q2[i]
    # eq. 47: Qbar1^B = Q1^B - S_12^B Qbar2^C = -Qbar2^A
    work.Qb1[B, 0] = work.Q1[B, 0] - q2[0]
    work.Qb1[B, 1] = work.Q1[B, 1] - q2[1]
    work.Qb1[B, 2] = work.Q1[B, 2] - (q2[2] + zx * q2[0] + zy * q2[1])
    for i in range(3):
        work.Qb2[A, i] = -work.Qb1[B, i]


# ---- leaf velocities (eqs. 11-12) and canonical derivatives (eqs. 49-51) ---------------------------
@nb.njit(**INLINED_WORKER)
def leaf_velocity(work, b):
    for i in range(3):
        v1 = work.xi10[b, i]
        v2 = work.xi20[b, i]
        for j in range(3):
            v1 += work.xi11[b, i, j] * work.T1[b, j] + work.xi12[b, i, j] * work.T2[b, j]
            v2 += work.xi12[b, j, i] * work.T1[b, j] + work.xi22[b, i, j] * work.T2[b, j]
        work.V1[b, i] = v1
        work.V2[b, i] = v2


@nb.njit(**INLINED_WORKER)
def joint_rates(data, work, k, qd, pd):
    """qd_k = H^T (V_1^B - V_2^A) (eq. 49); pd_k = H^T Qbar_1^B + s'^T Pbar_1^B (eqs. 50-51),
    where s' is the rate of the joint's motion axis: -Omega v_joint (revolute, the paper's
    S-dot of eq. 51) or omega_A Omega u (prismatic); only impulses T have a component along it."""
    H = work.H[k]
    tip = k == data.n_b   # B is the ground (the closing joint of a loop)
    va0 = va1 = va2 = 0.0
    if k > 0:
        va0, va1, va2 = work.V2[k - 1, 0], work.V2[k - 1, 1], work.V2[k - 1, 2]
    if tip:
        vb0 = vb1 = vb2 = 0.0
        tb0, tb1 = -work.T2[k - 1, 0], -work.T2[k - 1, 1]
        qb0 = qb1 = qb2 = 0.0
    else:
        vb0, vb1, vb2 = work.V1[k, 0], work.V1[k, 1], work.V1[k, 2]
        tb0, tb1 = work.T1[k, 0], work.T1[k, 1]
        qb0, qb1, qb2 = work.Qb1[k, 0], work.Qb1[k, 1], work.Qb1[k, 2]
    qd[k] = H[0] * (vb0 - va0) + H[1] * (vb1 - va1) + H[2] * (vb2 - va2)
    if data.jtype[k] == REVOLUTE:
        sx, sy = vb1, -vb0               # -Omega v
    else:
        sx, sy = -va2 * H[1], va2 * H[0]  # omega_A Omega u
    pd[k] = H[0] * qb0 + H[1] * qb1 + H[2] * qb2 + sx * tb0 + sy * tb1


# ---- one evaluation ---------------------------------------------------------------------------------
# Range passes, inlined into the serial evaluation below and into the team workers (.team).
@nb.njit(cache=True, nogil=True, inline="always")
def leaves(data, work, p, lo, hi):
    for b in range(lo, hi):
        leaf(data, work, b, p)


@nb.njit(cache=True, nogil=True, inline="always")
def leaves_momenta(data, work, p, lo, hi):
    for b in range(lo, hi):
        leaf_momenta(data, work, b, p)


@nb.njit(cache=True, nogil=True, inline="always")
def assemblies(data, work, nodes, lo, hi) -> int:
    """Assemble ``nodes[lo:hi]`` in order (children before parents); 1 if a C is singular."""
    for i in range(lo, hi):
        if assemble(data, work, nodes[i]) != 0:
            return 1
    return 0


@nb.njit(cache=True, nogil=True, inline="always")
def disassemblies(data, work, nodes, lo, hi):
    """Disassemble ``nodes[lo:hi]`` in reverse order (parents before children)."""
    for i in range(hi - 1, lo - 1, -1):
        disassemble(data, work, nodes[i])


@nb.njit(cache=True, nogil=True, inline="always")
def velocities(work, lo, hi):
    for b in range(lo, hi):
        leaf_velocity(work, b)


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate(data, work, q, p, qd, pd) -> int:
    """The passes of one evaluation (inlined into its callers, which hand it unmanaged views):
    the tree's levels upwards, the base connection, the levels downwards."""
    kinematics_at(data, work, q)
    leaves(data, work, p, 0, data.n_b)
    nodes = data.level_nodes
    if assemblies(data, work, nodes, 0, nodes.shape[0]) != 0:
        return 1
    if base_connection(data, work) != 0:
        return 1
    downwards(data, work, qd, pd)
    return 0


@nb.njit(cache=True, nogil=True, inline="always")
def downwards(data, work, qd, pd):
    """The serial passes after the base connection (eqs. 45-48): the levels downwards, the
    handle velocities and the joint rates."""
    nodes = data.level_nodes
    disassemblies(data, work, nodes, 0, nodes.shape[0])
    velocities(work, 0, data.n_b)
    for k in range(data.n_j):
        joint_rates(data, work, k, qd, pd)


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate_momenta(data, work, p, qd, pd):
    """The passes of :func:`evaluate` at the position of the last evaluation with other momenta
    ``p``: its position-dependent results (kinematics, xi11/xi12/xi22, C, W, eta and their
    inverses) are reused, the momentum-dependent ones (xi10/xi20, beta, sigma, impulses,
    velocities, rates) computed by the same operations, so the result equals a full evaluation
    bit for bit. Semi-implicit Euler's second evaluation (same q, new momenta)."""
    leaves_momenta(data, work, p, 0, data.n_b)
    nodes = data.level_nodes
    for i in range(nodes.shape[0]):
        assemble_momenta(data, work, nodes[i])
    base_momenta(data, work)
    downwards(data, work, qd, pd)


@nb.njit(cache=True, nogil=True)
def hdca_derivative(data, work, q, p, qd, pd) -> int:
    """(qd, pd) = HDCA(q, p): status 0, or 1 when a joint's constraint matrix is singular.

    The views made here by ``unmanaged`` have a constant null memory-info that LLVM folds away,
    so the inlined passes carry no reference counting at all (3x faster than views received as
    arguments)."""
    return evaluate(unmanaged(data), unmanaged(work), unmanaged(q), unmanaged(p),
                    unmanaged(qd), unmanaged(pd))


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate_state(data, work, y, ydot) -> int:
    """``ydot = [qd; pd]`` at ``y = [q; p]`` with the passes inlined into the caller (the
    protocol derivative): the unmanaged views made here let LLVM drop every reference count,
    and no second call (with its by-value copy of the NamedTuples' array descriptors) is made
    per evaluation."""
    n = data.n_j
    return evaluate(unmanaged(data), unmanaged(work), unmanaged(y[:n]), unmanaged(y[n:]),
                    unmanaged(ydot[:n]), unmanaged(ydot[n:]))


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate_state_momenta(data, work, y, ydot) -> int:
    """:func:`evaluate_state` at the position of the last evaluation (``y[:n]`` is not read):
    :func:`evaluate_momenta`."""
    n = data.n_j
    evaluate_momenta(unmanaged(data), unmanaged(work), unmanaged(y[n:]), unmanaged(ydot[:n]),
                     unmanaged(ydot[n:]))
    return 0


@nb.njit(cache=True, nogil=True)
def hdca_derivative_momenta(data, work, p, qd, pd) -> int:
    """(qd, pd) = HDCA(q, p), q that of the last evaluation in ``work``
    (:func:`evaluate_momenta`)."""
    evaluate_momenta(unmanaged(data), unmanaged(work), unmanaged(p), unmanaged(qd),
                     unmanaged(pd))
    return 0


# ---- whole-trajectory outputs -------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True)
def trajectory_outputs(data, work, Y, qd_out, energy_out, closure_out, angle_out) -> int:
    """For recorded states ``Y (n, 2 n_j)``: joint velocities, energies [kinetic, gravity]
    (T = qd . p / 2: the constraint impulses do no work on admissible velocities),
    loop-closure errors [position, angle] and body angles."""
    n = data.n_j
    pd = np.empty(n, Y.dtype)
    for r in range(Y.shape[0]):
        st = hdca_derivative(data, work, Y[r, :n], Y[r, n:], qd_out[r], pd)
        if st != 0:
            return st
        kin = 0.0
        for k in range(n):
            kin += 0.5 * qd_out[r, k] * Y[r, n + k]
        pot = 0.0
        for b in range(data.n_b):
            angle_out[r, b] = work.theta[b]
            pot -= data.mass[b] * (data.gravity[0] * work.cw[b, 0] + data.gravity[1] * work.cw[b, 1])
        energy_out[r, 0] = kin
        energy_out[r, 1] = pot
        if data.closed:
            k = data.n_b
            dx = work.joint[k, 0] - data.point_b[k, 0]
            dy = work.joint[k, 1] - data.point_b[k, 1]
            closure_out[r, 0] = math.sqrt(dx * dx + dy * dy)
            th = work.theta[k - 1] + data.offset[k]
            if data.jtype[k] == REVOLUTE:
                th += Y[r, k]
            closure_out[r, 1] = math.atan2(math.sin(th), math.cos(th))
    return 0
