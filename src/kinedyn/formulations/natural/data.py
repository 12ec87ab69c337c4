"""Compiled data of the natural formulation (NamedTuples of arrays) and their construction."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...model.tape import CONST, COS, POWC, SIN
from .entities import Entity
from .layout import LINEAR, NaturalLayout


class NaturalData(NamedTuple):
    """Arrays of a model in natural coordinates (shapes in comments; e = entities, c = equations).

    q is made of coordinate blocks of ``dim`` entries; entity e is
    ``ent_const[e] + sum_t (ent_alpha[t] I + ent_beta[t] J) q[dim*ent_block[t]:...]`` for t in
    ``ent_start[e]:ent_start[e+1]``.
    """
    dim: int                 # 2 or 3, a run-time value (see .kernels on the loop workers)
    n_q: int
    ent_const: np.ndarray    # (n_e, d)
    ent_start: np.ndarray    # (n_e + 1,)
    ent_block: np.ndarray    # (n_term,)
    ent_alpha: np.ndarray    # (n_term,)
    ent_beta: np.ndarray     # (n_term,)
    con_kind: np.ndarray     # (n_c,) LINEAR / DOT / ANGLE
    con_ent: np.ndarray      # (n_c, 3) entity ids, -1 unused
    con_comp: np.ndarray     # (n_c,) component of LINEAR equations
    con_value: np.ndarray    # (n_c,) constant target
    con_fn: np.ndarray       # (n_c, 2) function ids (target f(t); ANGLE: sin, cos), -1 none
    n_con_ent: int           # entities 0..n_con_ent-1 are those the equations read (the
                             # rest: outputs and loads, never needed by phi or gamma)
    jac_indptr: np.ndarray   # (n_c + 1,) CSR pattern of phi_q
    jac_indices: np.ndarray  # (nnz,)
    jc_start: np.ndarray     # (n_c + 1,) Jacobian contributions per row (DOT/ANGLE rows)
    jc_slot: np.ndarray      # entity slot of the contribution
    jc_term: np.ndarray      # entity term (block, alpha, beta)
    jc_pos: np.ndarray       # CSR position of the block's first column (dim columns follow)
    jc_first: np.ndarray     # 1 for the first contribution to its block (assigns), 0 (adds)
    jac_const: np.ndarray    # (nnz,) Jacobian values of LINEAR rows, which are constant
    coef: np.ndarray         # the coefficients above as the generated code reads them
                             # (.codegen.coefficients: the code is the same for any geometry)
    fn_ops: np.ndarray       # tapes of the functions of time (model's + derived)
    fn_args: np.ndarray
    fn_start: np.ndarray
    fp_op: np.ndarray        # the same functions as one register program (model.tape.Program)
    fp_arg: np.ndarray
    fp_a: np.ndarray
    fp_b: np.ndarray
    fp_out: np.ndarray       # (n_function,) register of each function
    fp_code: np.ndarray      # [address] of the program as generated code, [0]: interpret
    fp_input: np.ndarray     # the model's inputs (model.tape.TapeTable.inputs: the same array)
    mass_indptr: np.ndarray  # CSR pattern of the constant mass matrix
    mass_indices: np.ndarray
    mass_values: np.ndarray
    gravity_q: np.ndarray    # (n_q,) constant generalised gravity force
    pf_ent: np.ndarray       # (n_pf,) point-force application entity
    pf_fn: np.ndarray        # (n_pf, d) force component functions
    pf_frame: np.ndarray     # (n_pf,) 0 world, 1 body
    pf_axes: np.ndarray      # (n_pf, d) entities of the body axes (for body-frame forces)
    sp_ent: np.ndarray       # (n_sp,) entity p_b - p_a
    sp_k: np.ndarray
    sp_c: np.ndarray
    sp_l0: np.ndarray
    sp_fn: np.ndarray        # actuator force along the line, -1 none
    jf_kind: np.ndarray      # (n_jf,) 0 angle, 1 displacement
    jf_ent: np.ndarray       # (n_jf, 3)
    jf_fn: np.ndarray        # (n_jf,)
    uf_code: np.ndarray      # (n_uf,) addresses of the user forces' wrappers (model.user_forces)
    uf_start: np.ndarray     # (n_uf + 1,) their points: uf_ent[uf_start[i]:uf_start[i + 1]]
    uf_ent: np.ndarray       # (n_up,) point entities


class RowSet(NamedTuple):
    """A fixed set of equations and the entities they read (:meth:`.Natural.row_selection`):
    the kernels compute exactly those entities in one straight loop, whatever the size of the
    set (a structural group, a thread's share of a DAG level), or run the straight-line code
    generated for the set."""
    rows: np.ndarray  # (n,) int64 equation rows
    ents: np.ndarray  # (n_ents,) int64 sorted ids of the entities the rows read
    code: np.ndarray  # (4,) int64 addresses of the rows' generated functions, 0: the loops
                      # (:mod:`.codegen`)


class NaturalWork(NamedTuple):
    """Scratch of the natural kernels (one per thread)."""
    ev: np.ndarray     # (3, d) entity values
    ed: np.ndarray     # (3, d) entity velocities
    g: np.ndarray      # (3, d) gradients
    freg: np.ndarray   # (n_reg, 3) registers of the function program
    fval: np.ndarray   # (n_function, 3) functions of time at ftime[0]
    ftime: np.ndarray  # [time of fval, the inputs' generation then (0: not filled)]
    ent: np.ndarray    # (n_e, d) entity values of the current call
    entd: np.ndarray   # (n_e, d) entity rates of the current call
    stamp: np.ndarray  # (n_e,) call number that last computed each entity value
    stampd: np.ndarray  # (n_e,) call number that last computed each entity rate
    counter: np.ndarray  # (1,) call counter
    nothing: np.ndarray  # (0,) stands for an output a kernel does not write
    phi: np.ndarray    # (n_c,) where Phi_q alone's generated code writes the Phi it computes too
    up: np.ndarray     # (n_up * d,) user-force points' positions, velocities, forces (flat: the
    uv: np.ndarray     # wrappers read C arrays)
    uo: np.ndarray


def make_work(data: NaturalData) -> NaturalWork:
    d = data.dim
    n_e = len(data.ent_start) - 1
    return NaturalWork(np.zeros((3, d)), np.zeros((3, d)), np.zeros((3, d)),
                       np.zeros((len(data.fp_op), 3)),
                       np.zeros((len(data.fn_start) - 1, 3)),
                       np.zeros(2), np.zeros((n_e, d)), np.zeros((n_e, d)),
                       np.zeros(n_e, np.int64), np.zeros(n_e, np.int64), np.zeros(1, np.int64),
                       np.zeros(0), np.zeros(len(data.con_kind)),
                       *(np.zeros(len(data.uf_ent) * d) for _ in range(3)))


class EntityTable:
    """Deduplicated entities with ids (a Python-side registry)."""

    def __init__(self, dim: int):
        self.dim = dim
        self.items: list[Entity] = []
        self._ids: dict = {}

    def id(self, e: Entity) -> int:
        key = e.key()
        if key not in self._ids:
            self._ids[key] = len(self.items)
            self.items.append(e)
        return self._ids[key]

    def arrays(self):
        start, block, alpha, beta = [0], [], [], []
        for e in self.items:
            for b, (a, c) in sorted(e.terms.items()):
                block.append(b)
                alpha.append(a)
                beta.append(c)
            start.append(len(block))
        const = np.array([e.const for e in self.items]).reshape(-1, self.dim)
        return (const, np.array(start, np.int64), np.array(block, np.int64),
                np.array(alpha, float), np.array(beta, float))


def function_tapes(layout: NaturalLayout):
    """The model's tapes plus the derived ones (sin/cos/square of a model function)."""
    table = layout.model.functions
    ops, args, start = list(table.ops), list(table.args), list(table.start)
    for op, fid in layout.extra_functions:
        if fid < 0:  # no function (a joint coordinate read as an output): f = 0
            ops.append(CONST)
            args.append(0.0)
        else:
            a, b = table.start[fid], table.start[fid + 1]
            ops += list(table.ops[a:b])
            args += list(table.args[a:b])
        if op == "square":
            ops.append(POWC)
            args.append(2.0)
        else:
            ops.append(SIN if op == "sin" else COS)
            args.append(0.0)
        start.append(len(ops))
    return (np.array(ops, np.int64), np.array(args, float), np.array(start, np.int64))


def jacobian_pattern(layout: NaturalLayout, table: EntityTable, con_ent: np.ndarray):
    """CSR pattern of phi_q, the block contributions of DOT/ANGLE rows and the constant values
    of LINEAR rows (see NaturalData)."""
    d = layout.dim
    indptr, indices, const = [0], [], []
    jc_start, jc_slot, jc_term, jc_pos, jc_first = [0], [], [], [], []
    term_offset = np.cumsum([0] + [len(e.terms) for e in table.items])
    for r, eq in enumerate(layout.equations):
        blocks = []  # (slot, term, block, alpha, beta)
        for s in range(3):
            eid = con_ent[r, s]
            if eid < 0:
                break
            for ti, (b, (a, c)) in enumerate(sorted(table.items[eid].terms.items())):
                blocks.append((s, int(term_offset[eid] + ti), b, a, c))
        if eq.kind == LINEAR:  # d(e0[comp])/dx_b = row comp of (alpha I + beta J)
            row = {}
            for _, _, b, a, c in blocks:
                coef = a * np.eye(d)[eq.comp] + (c * np.array([[0.0, -1.0], [1.0, 0.0]])[eq.comp]
                                                 if d == 2 else 0.0)
                for k in range(d):
                    if coef[k] != 0.0:
                        row[d * b + k] = row.get(d * b + k, 0.0) + coef[k]
            cols = sorted(row)
            indices += cols
            const += [row[c] for c in cols]
        else:
            cols = sorted({d * b + k for _, _, b, _, _ in blocks for k in range(d)})
            start = indptr[-1]
            pos = {col: start + i for i, col in enumerate(cols)}
            indices += cols
            const += [0.0] * len(cols)
            seen = set()
            for s, term, b, _, _ in blocks:
                jc_slot.append(s)
                jc_term.append(term)
                jc_pos.append(pos[d * b])
                jc_first.append(int(b not in seen))
                seen.add(b)
        indptr.append(len(indices))
        jc_start.append(len(jc_slot))
    as_int = lambda x: np.array(x, np.int64)  # noqa: E731
    return (as_int(indptr), as_int(indices), as_int(jc_start), as_int(jc_slot), as_int(jc_term),
            as_int(jc_pos), as_int(jc_first), np.array(const, float))


def mass_matrix(layout: NaturalLayout) -> np.ndarray:
    """The constant mass matrix (dense, n_q x n_q).

    A body point moves as r'(xi) = sum_b (alpha_b(xi) I + beta_b(xi) J) x_b' with alpha, beta
    affine in the body-local position xi. Then M_bb' = [int(alpha alpha' + beta beta') dm] I +
    [int(alpha beta' - beta alpha') dm] J, and for affine f = f0 + f1.xi, g = g0 + g1.xi:
    int f g dm = m f0 g0 + m (f0 g1 + g0 f1).xi_c + f1^T S g1 with S = m xi_c xi_c^T + E, E the
    body's second-moment tensor about its centre of mass (3-D: tr(I_c)/2 - I_c; 2-D the polar
    moment split evenly: in-plane rigid motion only sees |xi|^2 and xi x xi').
    """
    m, d = layout.model, layout.dim
    M = np.zeros((layout.n_q, layout.n_q))
    for body in range(1, m.n_body):
        mass, xc = m.body_mass[body], m.body_com[body]
        if d == 2:
            E = 0.5 * m.body_inertia[body] * np.eye(2)
        else:
            Ic = m.body_inertia[body]
            E = 0.5 * np.trace(Ic) * np.eye(3) - Ic
        S = mass * np.outer(xc, xc) + E
        base = layout.entity_point(body, np.zeros(d)).terms
        units = [layout.entity_point(body, np.eye(d)[k]).terms for k in range(d)]
        blocks = sorted(set(base) | set().union(*units))
        coef = {}
        for b in blocks:
            a0, c0 = base.get(b, (0.0, 0.0))
            a1 = np.array([u.get(b, (0.0, 0.0))[0] - a0 for u in units])
            c1 = np.array([u.get(b, (0.0, 0.0))[1] - c0 for u in units])
            coef[b] = (a0, a1, c0, c1)

        def integral(f0, f1, g0, g1):
            return mass * f0 * g0 + mass * (f0 * g1 + g0 * f1) @ xc + f1 @ S @ g1

        for b in blocks:
            for b2 in blocks:
                a0, a1, c0, c1 = coef[b]
                e0, e1, h0, h1 = coef[b2]
                sym = integral(a0, a1, e0, e1) + integral(c0, c1, h0, h1)
                blk = sym * np.eye(d)
                if d == 2:
                    skew = integral(a0, a1, h0, h1) - integral(c0, c1, e0, e1)
                    blk = blk + skew * np.array([[0.0, -1.0], [1.0, 0.0]])
                M[d * b:d * b + d, d * b2:d * b2 + d] += blk
    return M


def gravity_force(layout: NaturalLayout) -> np.ndarray:
    """Q_g = sum over bodies of T_b(xi_c)^T m g (constant in natural coordinates)."""
    m, d = layout.model, layout.dim
    Q = np.zeros(layout.n_q)
    g = m.gravity
    for body in range(1, m.n_body):
        e = layout.entity_point(body, m.body_com[body])
        for b, (a, c) in e.terms.items():
            f = a * g
            if c:
                f = f + c * np.array([g[1], -g[0]])  # J^T g
            Q[d * b:d * b + d] += m.body_mass[body] * f
    return Q
