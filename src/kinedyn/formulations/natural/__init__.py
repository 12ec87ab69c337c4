"""Natural coordinates (Garcia de Jalon): basic points and unit vectors shared at joints.

``Natural(model)`` chooses the coordinates and writes every equation once (:mod:`.layout`),
compiles them into :class:`.data.NaturalData` for the compiled kernels (:mod:`.kernels`, which
implement the protocol functions) and keeps a readable NumPy reference of each kernel
(:meth:`Natural.reference_phi` ...), against which the kernels are tested.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sps

from ...errors import coordinates
from ...model.compiled import CompiledModel
from ...model.tape import MAX_STACK, eval_tape
from ...model.tape_codegen import program_arrays
from ...model.user_forces import compile_user_force
from . import kernels  # noqa: F401  (registers the protocol overloads)
from .codegen import coefficients, compile_rows
from .data import (EntityTable, NaturalData, NaturalWork, RowSet, function_tapes, gravity_force,
                   jacobian_pattern, make_work, mass_matrix)
from .entities import J2
from .layout import ANGLE, DOT, LINEAR, NaturalLayout


class Natural:
    """A model in natural coordinates.

    Attributes
    ----------
    layout: the coordinate and equation choice; ``n_q``, ``n_c``; ``q0`` the initial coordinates
    (from the model's initial poses, not yet assembled); ``coordinate_names``,
    ``constraint_names``; ``data`` (NaturalData) for compiled code.
    """

    name = "natural"

    def __init__(self, model: CompiledModel):
        self.model = model
        self.dim = d = model.dim
        self.layout = lay = NaturalLayout(model)
        self.n_q = lay.n_q
        self.q0 = lay.q0.copy()
        self.coordinate_names = tuple(f"{b.name}.{'xyz'[k]}" for b in lay.blocks for k in range(d))
        self.constraint_names = tuple(eq.name for eq in lay.equations)
        self.constraint_owner = tuple(eq.owner for eq in lay.equations)
        self.n_c = len(lay.equations)
        self.entities = table = EntityTable(d)
        con_ent = np.full((self.n_c, 3), -1, np.int64)
        for r, eq in enumerate(lay.equations):
            for s, e in enumerate(eq.entities):
                con_ent[r, s] = table.id(e)
        # output entities: every body's origin and axes, every model point, every centre of mass
        self.body_origin = np.array([table.id(lay.entity_point(b, np.zeros(d)))
                                     for b in range(model.n_body)], np.int64)
        self.body_axes = np.array([[table.id(lay.entity_vector(b, np.eye(d)[k])) for k in range(d)]
                                   for b in range(model.n_body)], np.int64).reshape(-1, d)
        self.point_entity = np.array([table.id(lay.entity_point(int(model.point_body[p]),
                                                                model.point_local[p]))
                                      for p in range(model.n_point)], np.int64)
        self.com_entity = np.array([table.id(lay.entity_point(b, model.body_com[b]))
                                    for b in range(model.n_body)], np.int64)
        # every joint coordinate (angle or displacement) as its equation's entities, for outputs
        self.joint_coordinates: dict[tuple[int, str], tuple[int, tuple[int, ...]]] = {}
        for j in range(model.n_joint):
            jtype = model.joint_type_name(j)
            for label, comp in (("angle", 0), ("displacement", 1)):
                if (label == "angle" and jtype in ("revolute", "cylindrical")) or \
                        (label == "displacement" and jtype in ("prismatic", "cylindrical")):
                    eq = lay.joint_coordinate_equation(j, comp, -1, model.joint_name[j])
                    self.joint_coordinates[j, label] = (eq.kind,
                                                        tuple(table.id(e) for e in eq.entities))
        # the equations' entities were numbered first: 0..n_con_ent-1, the kernels' straight
        # loop over "every entity" stops there (Stewart platform: 52 of 107)
        n_con_ent = int(con_ent.max()) + 1 if con_ent.size else 0
        assert set(np.unique(con_ent[con_ent >= 0]).tolist()) == set(range(n_con_ent))
        forces = self._force_entities(table)
        self.mass_dense = mass_matrix(lay)
        M = sps.csr_matrix(self.mass_dense)
        M.sort_indices()
        ops, args, start = function_tapes(lay)
        (const, e_start, e_block, e_alpha, e_beta) = table.arrays()
        (indptr, indices, jc_start, jc_slot, jc_term, jc_pos, jc_first, jac_const) = jacobian_pattern(
            lay, table, con_ent)
        # index arrays read only by the compiled kernels are unsigned: Numba then indexes
        # without a wrap-around test (Stewart platform phi with phi_q 1.73 -> 1.46 us)
        u = lambda a: np.asarray(a).astype(np.uint32)  # noqa: E731
        self.data = NaturalData(
            dim=d, n_q=self.n_q, ent_const=const, ent_start=u(e_start),
            ent_block=u(e_block), ent_alpha=e_alpha, ent_beta=e_beta,
            con_kind=u([eq.kind for eq in lay.equations]),
            con_ent=con_ent, con_comp=u([eq.comp for eq in lay.equations]),
            con_value=np.array([eq.value for eq in lay.equations], float),
            con_fn=np.array([eq.functions for eq in lay.equations], np.int64).reshape(-1, 2),
            n_con_ent=n_con_ent,
            jac_indptr=indptr, jac_indices=indices, jc_start=u(jc_start), jc_slot=u(jc_slot),
            jc_term=u(jc_term), jc_pos=u(jc_pos), jc_first=u(jc_first), jac_const=jac_const,
            coef=np.zeros(0),
            fn_ops=ops, fn_args=args, fn_start=start,
            **program_arrays(ops, args, start, model.name), fp_input=model.functions.inputs,
            mass_indptr=M.indptr.astype(np.int64), mass_indices=M.indices.astype(np.int64),
            mass_values=M.data.astype(float), gravity_q=gravity_force(lay), **forces)
        self.data = self.data._replace(coef=coefficients(self.data))
        self._E, self._c = self._entity_matrix()

    # ---- construction helpers ----------------------------------------------------------------
    def _force_entities(self, table: EntityTable) -> dict:
        m, lay, d = self.model, self.layout, self.dim
        pf_ent = [table.id(lay.entity_point(int(m.point_force_body[i]),
                                            m.point_local[m.point_force_point[i]]))
                  for i in range(len(m.point_force_name))]
        pf_axes = [[table.id(lay.entity_vector(int(m.point_force_body[i]), np.eye(d)[k]))
                    for k in range(d)] for i in range(len(m.point_force_name))]
        sp_ent = []
        for i in range(len(m.spring_name)):
            pa, pb = m.spring_point_a[i], m.spring_point_b[i]
            e = (lay.entity_point(int(m.point_body[pb]), m.point_local[pb])
                 - lay.entity_point(int(m.point_body[pa]), m.point_local[pa]))
            sp_ent.append(table.id(e))
        jf_kind, jf_ent = [], []
        for i in range(len(m.joint_force_name)):
            j, comp = int(m.joint_force_joint[i]), int(m.joint_force_component[i])
            eq = lay.joint_coordinate_equation(j, comp, -1, m.joint_force_name[i])
            ids = [table.id(e) for e in eq.entities] + [-1] * (3 - len(eq.entities))
            jf_kind.append(0 if eq.kind == ANGLE else 1)
            jf_ent.append(ids)
        # user forces: compiled wrappers, called through their addresses
        user = [compile_user_force(name, fn, len(idx), d) for name, idx, fn in m.user_forces]
        uf_ent = [self.point_entity[p] for _, idx, _ in m.user_forces for p in idx]
        uf_start = np.cumsum([0] + [len(idx) for _, idx, _ in m.user_forces])
        as_int = lambda x, shape: np.array(x, np.int64).reshape(shape)  # noqa: E731
        return dict(pf_ent=as_int(pf_ent, (-1,)), pf_fn=as_int(m.point_force_function, (-1, d)),
                    pf_frame=as_int(m.point_force_frame, (-1,)), pf_axes=as_int(pf_axes, (-1, d)),
                    sp_ent=as_int(sp_ent, (-1,)), sp_k=np.asarray(m.spring_stiffness, float),
                    sp_c=np.asarray(m.spring_damping, float),
                    sp_l0=np.asarray(m.spring_free_length, float),
                    sp_fn=as_int(m.spring_function, (-1,)), jf_kind=as_int(jf_kind, (-1,)),
                    jf_ent=as_int(jf_ent, (-1, 3)),
                    jf_fn=as_int(m.joint_force_function, (-1,)),
                    uf_code=as_int([k.address for k in user], (-1,)),
                    uf_start=as_int(uf_start, (-1,)), uf_ent=as_int(uf_ent, (-1,)))

    def _entity_matrix(self):
        """E (n_e*d x n_q) and c (n_e*d) with entity values = (E q + c).reshape(n_e, d)."""
        d = self.dim
        rows, cols, vals = [], [], []
        for i, e in enumerate(self.entities.items):
            for b, (a, c) in e.terms.items():
                block = a * np.eye(d) + (c * J2 if d == 2 else 0.0)
                for r in range(d):
                    for k in range(d):
                        if block[r, k] != 0.0:
                            rows.append(d * i + r)
                            cols.append(d * b + k)
                            vals.append(block[r, k])
        n_e = len(self.entities.items)
        E = sps.csr_matrix((vals, (rows, cols)), shape=(n_e * d, self.n_q))
        c = np.concatenate([e.const for e in self.entities.items]) if n_e else np.zeros(0)
        return E, c

    def make_work(self) -> NaturalWork:
        return make_work(self.data)

    def row_selection(self, rows) -> RowSet:
        """``rows`` with the entities they read, for the compiled kernels (:class:`.RowSet`).
        Passed in place of a row array to the protocol functions, the kernels compute those
        entities in one straight loop instead of looking each one up per row (structural
        groups, the threads' shares of a level; see :func:`.kernels._prepare`), or run the
        code generated for the rows (:func:`.codegen.compile_rows`)."""
        rows = np.asarray(rows, np.int64)
        ents = self.data.con_ent[rows].ravel()
        return RowSet(rows, np.unique(ents[ents >= 0]).astype(np.int64),
                      compile_rows(self.data, rows))

    def body_coordinates(self) -> dict[str, list[int]]:
        """For each moving body, the coordinates of the points and vectors that position it
        (its frame: origin and directions); used to find structural groups."""
        d, out = self.dim, {}
        for b, frame in enumerate(self.layout.frames):
            if frame is not None:
                blocks = sorted({k for e in [frame.origin, *frame.directions] for k in e.terms})
                out[self.model.body_name[b]] = [d * k + i for k in blocks for i in range(d)]
        return out

    @cached_property
    def jacobian_pattern(self) -> sps.csr_matrix:
        """Sparsity pattern of phi_q (ones)."""
        n = len(self.data.jac_indices)
        return sps.csr_matrix((np.ones(n), self.data.jac_indices, self.data.jac_indptr),
                              shape=(self.n_c, self.n_q))

    # ---- NumPy reference implementation --------------------------------------------------------
    def _functions(self, t: float) -> np.ndarray:
        s = np.zeros((MAX_STACK, 3))
        st = self.data.fn_start
        return np.array([eval_tape(self.data.fn_ops, self.data.fn_args, st[k], st[k + 1], t, s,
                                   self.data.fp_input)
                         for k in range(len(st) - 1)]).reshape(-1, 3)

    def entity_values(self, q: np.ndarray, derivative: bool = False) -> np.ndarray:
        """All entity values (n_e, d) at q (or their time derivatives at qd, without constants)."""
        if np.shape(q) != (self.n_q,):  # (the NumPy references' one entry: name it, not NumPy)
            coordinates(self, q, "the velocities" if derivative else "the coordinates")
        v = self._E @ q
        return (v if derivative else v + self._c).reshape(-1, self.dim)

    def _rows(self, q, t):
        F = self._functions(t)
        ev = self.entity_values(q)
        for r, eq in enumerate(self.layout.equations):
            ids = self.data.con_ent[r]
            f = [F[k] if k >= 0 else np.zeros(3) for k in eq.functions]
            yield r, eq, [ev[i] if i >= 0 else None for i in ids], ids, f

    def reference_phi(self, q: np.ndarray, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_c)
        for r, eq, e, _, f in self._rows(q, t):
            if eq.kind == LINEAR:
                out[r] = e[0][eq.comp] - eq.value - f[0][0]
            elif eq.kind == DOT:
                out[r] = e[0] @ e[1] - eq.value - f[0][0]
            else:
                out[r] = f[0][0] * (e[0] @ e[1]) - f[1][0] * _triple(e)
        return out

    def reference_phi_q(self, q: np.ndarray, t: float = 0.0) -> np.ndarray:
        """Dense phi_q by the chain rule through the entity matrix E."""
        d = self.dim
        out = np.zeros((self.n_c, self.n_q))
        E = self._E.toarray()
        for r, eq, e, ids, f in self._rows(q, t):
            grads = _gradients(eq, e, f, d)
            for s, g in enumerate(grads):
                out[r] += g @ E[d * ids[s]:d * ids[s] + d]
        return out

    def reference_phi_t(self, q: np.ndarray, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_c)
        for r, eq, e, _, f in self._rows(q, t):
            if eq.kind == ANGLE:
                out[r] = f[0][1] * (e[0] @ e[1]) - f[1][1] * _triple(e)
            else:
                out[r] = -f[0][1]
        return out

    def reference_gamma(self, q: np.ndarray, qd: np.ndarray, t: float = 0.0) -> np.ndarray:
        """gamma from its definition -(d/dt)(phi_q) qd - phi_tt, by exact product rules."""
        out = np.zeros(self.n_c)
        ed = self.entity_values(qd, derivative=True)
        for r, eq, e, ids, f in self._rows(q, t):
            v = [ed[i] if i >= 0 else None for i in ids]
            if eq.kind == LINEAR:
                out[r] = f[0][2]
            elif eq.kind == DOT:
                out[r] = -2.0 * v[0] @ v[1] + f[0][2]
            else:
                (S, S1, S2), (C, C1, C2) = f
                D, Dd = e[0] @ e[1], v[0] @ e[1] + e[0] @ v[1]
                T = _triple(e)
                if self.dim == 2:
                    Td = _triple([v[0], e[1]]) + _triple([e[0], v[1]])
                    Tv = 2 * _triple([v[0], v[1]])
                else:
                    Td = _triple([v[0], e[1], e[2]]) + _triple([e[0], v[1], e[2]]) + \
                        _triple([e[0], e[1], v[2]])
                    Tv = 2 * (_triple([v[0], v[1], e[2]]) + _triple([v[0], e[1], v[2]])
                              + _triple([e[0], v[1], v[2]]))
                out[r] = -(S2 * D + 2 * S1 * Dd + 2 * S * (v[0] @ v[1]) - C2 * T - 2 * C1 * Td
                           - C * Tv)
        return out

    def reference_forces(self, q: np.ndarray, qd: np.ndarray, t: float = 0.0) -> np.ndarray:
        """Generalised forces by virtual work: sum over loads of (d r / d q)^T F."""
        m, d = self.model, self.dim
        E = self._E.toarray()
        ev = self.entity_values(q)
        evd = self.entity_values(qd, derivative=True)
        F = self._functions(t)
        Q = self.data.gravity_q.copy()

        def jac(eid):
            return E[d * eid:d * eid + d]
        for i, eid in enumerate(self.data.pf_ent):
            f = np.array([F[k][0] for k in self.data.pf_fn[i]])
            if self.data.pf_frame[i] == 1:
                R = np.column_stack([ev[a] for a in self.data.pf_axes[i]])
                f = R @ f
            Q += jac(eid).T @ f
        for i, eid in enumerate(self.data.sp_ent):
            x, v = ev[eid], evd[eid]
            L = np.linalg.norm(x)
            if L < 1e-12:  # no direction: a zero-length spring exerts no force
                continue
            tension = m.spring_stiffness[i] * (L - m.spring_free_length[i]) + \
                m.spring_damping[i] * (x @ v) / L
            if self.data.sp_fn[i] >= 0:
                tension -= F[self.data.sp_fn[i]][0]
            Q += jac(eid).T @ (-tension * x / L)
        for i in range(len(self.data.jf_fn)):
            tau = F[self.data.jf_fn[i]][0]
            ids = [k for k in self.data.jf_ent[i] if k >= 0]
            e = [ev[k] for k in ids]
            if self.data.jf_kind[i] == 0:
                D, T = e[0] @ e[1], _triple(e)
                grads = _gradients_angle(-T / (D * D + T * T), -D / (D * D + T * T), e, d)
            else:
                grads = [e[1], e[0]]
            for s, g in enumerate(grads):
                Q += tau * (jac(ids[s]).T @ g)
        return Q

    # ---- outputs -------------------------------------------------------------------------------
    def observables(self, Q: np.ndarray, QD: np.ndarray, QDD: np.ndarray, names=None) -> dict:
        """Named channels of whole trajectories (see :mod:`.observables`; ``names``: at least
        these)."""
        from .observables import observables
        return observables(self, np.atleast_2d(Q), np.atleast_2d(QD), np.atleast_2d(QDD),
                           names)

    def body_positions(self, q: np.ndarray) -> np.ndarray:
        """World positions of the body frames' origins (n_body, d)."""
        return self.entity_values(q)[self.body_origin]

    def body_rotations(self, q: np.ndarray) -> np.ndarray:
        """R_WB of every body (n_body, d, d): columns are the body axes in world coordinates."""
        ev = self.entity_values(q)
        return np.stack([np.column_stack([ev[a] for a in axes]) for axes in self.body_axes])

    def point_positions(self, q: np.ndarray) -> np.ndarray:
        """World positions of every model point (n_point, d)."""
        return self.entity_values(q)[self.point_entity]

    def point_velocities(self, qd: np.ndarray) -> np.ndarray:
        return self.entity_values(qd, derivative=True)[self.point_entity]

    def com_positions(self, q: np.ndarray) -> np.ndarray:
        return self.entity_values(q)[self.com_entity]

    def _trajectory(self, Q, derivative=False):
        """Entity values (or rates) along a trajectory: (n, n_e, d)."""
        Q = np.atleast_2d(Q)
        V = (self._E @ Q.T).T
        if not derivative:
            V = V + self._c
        return V.reshape(len(Q), -1, self.dim)

    def body_motion(self, Q, QD, QDD) -> dict:
        """Motion of every body along a trajectory (world frame).

        Returns arrays over (step, body): ``com``, ``com_d``, ``com_dd`` (n, n_body, d);
        ``R`` (n, n_body, d, d); ``omega`` and ``alpha`` (n, n_body, 3) in 3-D or (n, n_body)
        in 2-D. The ground's entries are zero / identity.
        """
        V, VD, VDD = (self._trajectory(Q), self._trajectory(QD, True),
                      self._trajectory(QDD, True))
        axes = self.body_axes
        R = np.stack([V[:, axes[:, k]] for k in range(self.dim)], axis=-1)    # (n, nb, d, d)
        Rd = np.stack([VD[:, axes[:, k]] for k in range(self.dim)], axis=-1)
        Rdd = np.stack([VDD[:, axes[:, k]] for k in range(self.dim)], axis=-1)
        Rt = np.swapaxes(R, -1, -2)
        W = Rd @ Rt
        A = Rdd @ Rt - W @ W
        if self.dim == 2:
            omega, alpha = W[..., 1, 0], A[..., 1, 0]
        else:
            omega = np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)
            alpha = np.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], axis=-1)
        return {"com": V[:, self.com_entity], "com_d": VD[:, self.com_entity],
                "com_dd": VDD[:, self.com_entity], "R": R, "omega": omega, "alpha": alpha}

    def point_trajectory(self, Q, QD) -> tuple[np.ndarray, np.ndarray]:
        """World positions and velocities of every model point: (n, n_point, d) each."""
        return (self._trajectory(Q)[:, self.point_entity],
                self._trajectory(QD, True)[:, self.point_entity])

    def energies(self, Q, QD) -> dict:
        """Kinetic, gravity potential and spring energy along a trajectory (n,) each."""
        m = self.model
        Q, QD = np.atleast_2d(Q), np.atleast_2d(QD)
        kinetic = 0.5 * np.einsum("ni,ij,nj->n", QD, self.mass_dense, QD)
        com = self._trajectory(Q)[:, self.com_entity[1:]]
        gravity = -np.einsum("b,nbk,k->n", m.body_mass[1:], com, m.gravity)
        spring = np.zeros(len(Q))
        if len(self.data.sp_ent):
            ext = self._trajectory(Q)[:, self.data.sp_ent]
            length = np.linalg.norm(ext, axis=-1)
            spring = 0.5 * np.sum(m.spring_stiffness * (length - m.spring_free_length) ** 2, axis=1)
        return {"kinetic": kinetic, "gravity": gravity, "spring": spring}

    def kinetic_energy(self, qd: np.ndarray) -> float:
        return 0.5 * float(qd @ self.mass_dense @ qd)

    def potential_energy(self, q: np.ndarray) -> float:
        """Gravity potential -sum m g.r_c plus spring energy 1/2 k (L - L0)^2."""
        m = self.model
        ev = self.entity_values(q)
        V = -float(np.sum(m.body_mass[1:, None] * (ev[self.com_entity[1:]] @ m.gravity)[:, None]))
        for i, eid in enumerate(self.data.sp_ent):
            L = np.linalg.norm(ev[eid])
            V += 0.5 * m.spring_stiffness[i] * (L - m.spring_free_length[i]) ** 2
        return V


def _triple(e):
    if len(e[0]) == 2:
        return e[0][0] * e[1][1] - e[0][1] * e[1][0]
    return float(np.cross(e[0], e[1]) @ e[2])


def _gradients_angle(S, C, e, d):
    if d == 2:
        return [S * e[1] - C * np.array([e[1][1], -e[1][0]]),
                S * e[0] - C * np.array([-e[0][1], e[0][0]])]
    return [S * e[1] - C * np.cross(e[1], e[2]), S * e[0] - C * np.cross(e[2], e[0]),
            -C * np.cross(e[0], e[1])]


def _gradients(eq, e, f, d):
    if eq.kind == LINEAR:
        return [np.eye(d)[eq.comp]]
    if eq.kind == DOT:
        return [e[1], e[0]]
    return _gradients_angle(f[0][0], f[1][0], e, d)


__all__ = ["Natural", "NaturalData", "NaturalWork"]
