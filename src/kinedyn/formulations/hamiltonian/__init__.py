"""Hamiltonian formulation: joint coordinates ``q`` and canonical momenta ``p`` for HDCA.

``Hamiltonian(model)`` reads a planar serial chain (open, or closed through the ground at both
ends like the four-bar) from the model (:func:`kinedyn.topology.serial_chain`), builds its
balanced binary assembly tree (:func:`kinedyn.topology.balanced_tree`) and compiles both into
:class:`.kernels.HDCAData` for the compiled HDCA passes of :mod:`.kernels` (HDCA paper,
Chadaj/Malczyk/Fraczek et al., section 2). The state is ``y = [q; p]``: ``q`` has one entry per
joint (revolute: relative angle theta_B - theta_A; prismatic: displacement of the B-side point
along the axis), including the loop-closing joint of a closed chain, whose coordinate is
redundant (the loop-closure equations of the paper's Fig. 9 tie it to the others and are reported,
not enforced at position level, as in the paper). ``p`` are the canonical momenta, ``p = M qd``
for an open chain and ``M qd + Phi_q^T sigma`` (constraint impulses) for a closed one.

Supported: revolute and prismatic joints, gravity. Drivers and other loads raise
:class:`~kinedyn.errors.ModelError`.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ModelError, SolverError
from ...model.compiled import JOINT_CODE, CompiledModel, compiled_model
from ...topology import Topology, balanced_tree, serial_chain
from . import kernels as K
from . import origin  # noqa: F401  (registers HDCA's compiled protocol)
from .kernels import HDCAData, HDCAWork, hdca_derivative, make_work, trajectory_outputs

__all__ = ["Hamiltonian", "HDCAData", "HDCAWork", "hdca_derivative"]

DTYPES = {"float64": np.float64, "float32": np.float32}


class Hamiltonian:
    """A planar chain in joint coordinates and canonical momenta.

    Parameters
    ----------
    model: CompiledModel (planar serial chain, revolute/prismatic joints, gravity only).
    precision: ``float64`` or ``float32`` (the paper's FPGA ran single precision).

    Attributes: ``chain``, ``tree``, ``n_j``, ``joint_names``, ``q0`` (initial joint coordinates,
    assembled), ``data`` (HDCAData), ``closed``.
    """

    name = "hamiltonian"

    def __init__(self, model: CompiledModel, *, precision: str = "float64"):
        if precision not in DTYPES:
            from ...errors import UnknownNameError
            raise UnknownNameError("precision", precision, DTYPES)
        self.model = model = compiled_model(model)
        self.precision = precision
        self.dtype = DTYPES[precision]
        _check_supported(model)
        self.chain = ch = _chain(model)
        self.closed = ch.closed
        self.n_b, self.n_j = len(ch.bodies), len(ch.joints)
        self.tree = balanced_tree(self.n_b)
        self.joint_names = tuple(model.joint_name[j] for j in ch.joints)
        self.body_names = tuple(model.body_name[b] for b in ch.bodies)
        #: +1 where the chain's joint coordinate has the model's sign, -1 where reversed
        self.joint_sign = np.array([-1.0 if r else 1.0 for r in ch.reversed])
        angles, points = self._initial_pose()
        self._arrays = self._chain_arrays(angles, points)
        self.q0 = self.joint_coordinates(angles, points)
        self.data = self.make_data()

    # ---- construction ----------------------------------------------------------------------------
    def _initial_pose(self):
        """Body angles (n_body,) and point positions (n_point, 2) of the initial configuration:
        the model's poses for an open chain, assembled by the natural formulation for a loop."""
        m = self.model
        if not self.closed:
            R = m.body_rotation
            angles = np.arctan2(R[:, 1, 0], R[:, 0, 0])
            pts = m.body_position[m.point_body] + np.einsum("nij,nj->ni", R[m.point_body],
                                                            m.point_local)
            return angles, pts
        from ..natural import Natural
        from ...kinematics.assembly import assemble
        f = Natural(m)
        q = assemble(f, f.q0, 0.0, 1e-13)
        zero = np.zeros((1, f.n_q))
        ch = f.observables(q[None], zero, zero)
        angles = np.array([0.0] + [ch[f"body.{m.body_name[b]}.angle"][0]
                                   for b in range(1, m.n_body)])
        pts = np.array([[ch[f"point.{n}.x"][0], ch[f"point.{n}.y"][0]] for n in m.point_name])
        return angles, pts

    def _sides(self, k):
        """Model body and point indices on the A (previous) and B (next) side of chain joint k."""
        m, ch = self.model, self.chain
        j = ch.joints[k]
        pa, pb = int(m.joint_point_a[j]), int(m.joint_point_b[j])
        ba, bb = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        return (bb, pb, ba, pa) if ch.reversed[k] else (ba, pa, bb, pb)

    def _chain_arrays(self, angles, points):
        m, ch = self.model, self.chain
        n_j = self.n_j
        jtype = np.zeros(n_j, np.int64)
        point_a, point_b, axis = np.zeros((n_j, 2)), np.zeros((n_j, 2)), np.zeros((n_j, 2))
        offset = np.zeros(n_j)
        for k in range(n_j):
            j = ch.joints[k]
            ba, pa, bb, pb = self._sides(k)
            point_a[k] = m.point_local[pa]
            point_b[k] = m.point_local[pb]
            if m.joint_type[j] == JOINT_CODE["prismatic"]:  # (never reversed: _chain)
                jtype[k] = K.PRISMATIC
                axis[k] = m.joint_axis_a[j]
                offset[k] = angles[bb] - angles[ba]
        return dict(jtype=jtype, point_a=point_a, point_b=point_b, axis=axis, offset=offset)

    def joint_coordinates(self, angles, points) -> np.ndarray:
        """Joint coordinates of a pose: model body angles (n_body,) and point positions
        (n_point, 2)."""
        q = np.zeros(self.n_j)
        for k in range(self.n_j):
            ba, pa, bb, pb = self._sides(k)
            if self._arrays["jtype"][k] == K.REVOLUTE:
                q[k] = _wrap(angles[bb] - angles[ba])
            else:
                c, s = math.cos(angles[ba]), math.sin(angles[ba])
                u = np.array([[c, -s], [s, c]]) @ self._arrays["axis"][k]
                q[k] = float(u @ (points[pb] - points[pa]))
        return q

    def make_data(self, precision: str | None = None) -> HDCAData:
        """Compiled data in ``precision`` (default: the constructor's)."""
        dt = DTYPES[precision or self.precision]
        m, ch, t = self.model, self.chain, self.tree
        body = np.array(ch.bodies)
        a = self._arrays
        lp, ln = t.level_arrays()
        f = lambda x: np.ascontiguousarray(x, dt)  # noqa: E731
        return HDCAData(
            n_b=self.n_b, n_j=self.n_j, closed=self.closed, mass=f(m.body_mass[body]),
            inv_mass=f(1.0 / m.body_mass[body]), inv_inertia=f(1.0 / m.body_inertia[body]),
            com=f(m.body_com[body]), jtype=a["jtype"], point_a=f(a["point_a"]),
            point_b=f(a["point_b"]), axis=f(a["axis"]), offset=f(a["offset"]),
            gravity=f(m.gravity), left=t.left, right=t.right, node_joint=t.joint, first=t.first,
            last=t.last, level_ptr=lp, level_nodes=ln, height=t.height)

    def make_work(self, data: HDCAData | None = None) -> HDCAWork:
        return make_work(self.data if data is None else data)

    # ---- evaluation ------------------------------------------------------------------------------
    def state_derivative(self, q, p, data: HDCAData | None = None, work: HDCAWork | None = None):
        """``(qd, pd)`` at one state (Python entry to the compiled evaluation)."""
        data = self.data if data is None else data
        work = make_work(data) if work is None else work
        dt = data.mass.dtype
        q, p = np.ascontiguousarray(q, dt), np.ascontiguousarray(p, dt)
        qd, pd = np.zeros(self.n_j, dt), np.zeros(self.n_j, dt)
        if hdca_derivative(data, work, q, p, qd, pd) != 0:
            raise SolverError("HDCA: singular joint constraint matrix (C of eq. 33 or eta of "
                              "eq. 43)", constraints=list(self.joint_names))
        return qd, pd

    def outputs(self, Y, data: HDCAData | None = None) -> dict[str, np.ndarray]:
        """Joint velocities, energies, loop closure and body angles of recorded states."""
        data = self.data if data is None else data
        Y = np.ascontiguousarray(Y, data.mass.dtype)
        n = len(Y)
        qd = np.zeros((n, self.n_j), Y.dtype)
        energy = np.zeros((n, 2))
        closure = np.zeros((n, 2))
        theta = np.zeros((n, self.n_b))
        if trajectory_outputs(data, make_work(data), Y, qd, energy, closure, theta) != 0:
            raise SolverError("HDCA: singular joint constraint matrix while evaluating outputs")
        return {"qd": qd, "energy": energy, "closure": closure, "theta": theta}


def _chain(model):
    """The model's serial chain, walked so that every prismatic joint lists its ground side as
    body_a (the displacement along the axis of body_a; a closed chain can be walked either way:
    the slider-crank from its slide, whose ground is body_a, instead of from the crank)."""
    topology = Topology(model)
    chain = serial_chain(topology)
    bad = _reversed_prismatic(model, chain)
    if bad and chain.closed:
        other = serial_chain(topology, start=1)
        if not _reversed_prismatic(model, other):
            return other
    if bad:
        raise ModelError(f"HDCA: prismatic joint {bad!r} must list the body nearer the ground as "
                         "body_a (its axis and displacement are those of body_a)",
                         location="joints")
    return chain


def _reversed_prismatic(model, chain):
    """The name of the first prismatic joint the chain walks from body_b to body_a, or None."""
    for j, reversed_ in zip(chain.joints, chain.reversed):
        if reversed_ and model.joint_type[j] == JOINT_CODE["prismatic"]:
            return model.joint_name[j]
    return None


def _check_supported(model: CompiledModel) -> None:
    if model.dim != 2:
        raise ModelError(f"HDCA is implemented for planar models; {model.name!r} has dim "
                         f"{model.dim}", location="dim")
    allowed = {JOINT_CODE["revolute"], JOINT_CODE["prismatic"]}
    for j in range(model.n_joint):
        if model.joint_type[j] not in allowed:
            raise ModelError(f"HDCA supports revolute and prismatic joints; joint "
                             f"{model.joint_name[j]!r} is {model.joint_type_name(j)}",
                             location=f"joints.{model.joint_name[j]}")
    extra = [("drivers", model.driver_name), ("forces", model.point_force_name
                                              + model.spring_name + model.joint_force_name),
             ("user forces", tuple(u[0] for u in model.user_forces))]
    for what, names in extra:
        if len(names):
            raise ModelError(f"HDCA supports gravity only; the model has {what}: "
                             f"{', '.join(names)}", location=what.replace(" ", "_"))


def _wrap(x: float) -> float:
    return math.atan2(math.sin(x), math.cos(x))
