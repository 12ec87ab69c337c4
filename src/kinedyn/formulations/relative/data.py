"""Compiled data of the relative formulation and its construction from a :class:`JointTree`.

Loop closure (sparse-relative paper, section 2): each cut joint of the spanning tree gives
constraint equations Phi(q) = 0 of four primitive kinds between a point/vector of body a and
one of body b (all 3-D; planar models use only x, y point components):

* POINT  ``e_c . (p_b - p_a)``                    (coincident points, component c)
* DOT    ``u_a . v_b - value``                    (angle between body-fixed vectors)
* DOTD   ``u_a . (p_b - p_a)``                    (point on a line / plane)
* DIST   ``|p_b - p_a|^2 - L^2``                  (rod)

plus the drivers: ``DRIVE q_c - f(t)`` (joint driver on a tree joint) and
``DDIST |p_b - p_a|^2 - f(t)^2`` (distance driver).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sps

from ...errors import ModelError
from ...model.compiled import DRIVER_CODE, CompiledModel
from ...model.tape_codegen import program_arrays
from .tree import JointTree, frame_from_axis, lift_rotation, lift_vector

POINT, DOT, DOTD, DIST, DRIVE, DDIST = range(6)
KIND_NAMES = ("point", "dot", "dotd", "dist", "drive", "ddist")


class RelativeData(NamedTuple):
    """Arrays of a model in relative coordinates (n = links = coordinates, c = equations).

    Links are in base-to-tip order (parent index < child index); ``link_coord`` maps a link to
    its coordinate number in q (the numbering, section 3 of the paper).
    """
    dim: int
    n_q: int
    link_parent: np.ndarray   # (n,) parent link, -1 the ground
    link_coord: np.ndarray    # (n,) coordinate index of the link in q
    link_type: np.ndarray     # (n,) 0 rotation, 1 translation
    link_axis: np.ndarray     # (n, 3) axis in the link frame
    link_Rf: np.ndarray       # (n, 3, 3) fixed rotation from the parent link frame
    link_rf: np.ndarray       # (n, 3) fixed offset in the parent link frame
    link_mass: np.ndarray     # (n,) mass rigidly attached to the link
    link_com: np.ndarray      # (n, 3) its centre of mass, link frame
    link_inertia: np.ndarray  # (n, 3, 3) its inertia about that centre, link frame
    link_rep: np.ndarray      # (n,) link whose composite inertia equals this link's
    rep_parent: np.ndarray    # (n,) for a representative: the one its composite adds into
    gravity: np.ndarray       # (3,)
    con_kind: np.ndarray      # (c,)
    con_link_a: np.ndarray    # (c,) link of body a (-1 ground)
    con_link_b: np.ndarray
    con_pa: np.ndarray        # (c, 3) point of a, link-a frame
    con_pb: np.ndarray
    con_ua: np.ndarray        # (c, 3) vector of a (or world axis e_c for POINT), link-a frame
    con_vb: np.ndarray        # (c, 3) vector of b, link-b frame
    con_value: np.ndarray     # (c,) constant target
    con_coord: np.ndarray     # (c,) coordinate of a DRIVE row
    con_fn: np.ndarray        # (c,) function id of a driver, -1 none
    jac_indptr: np.ndarray    # (c + 1,) CSR pattern of B = phi_q
    jac_indices: np.ndarray
    mass_indptr: np.ndarray   # CSR pattern of a(q) (full symmetric storage)
    mass_indices: np.ndarray
    mass_pos: np.ndarray      # (n, n) CSR position of a[coord i, coord j], -1 outside
    fp_op: np.ndarray         # the functions of time as one register program
    fp_arg: np.ndarray        # (kinedyn.model.tape_codegen.program_arrays)
    fp_a: np.ndarray
    fp_b: np.ndarray
    fp_out: np.ndarray
    fp_code: np.ndarray
    fp_input: np.ndarray      # the model's inputs (model.tape.TapeTable.inputs: the same array)
    pf_link: np.ndarray       # (n_pf,) point forces
    pf_point: np.ndarray      # (n_pf, 3) link frame
    pf_fn: np.ndarray         # (n_pf, 3) component functions (-1 none)
    pf_frame: np.ndarray      # (n_pf,) 0 world, 1 body
    pf_R: np.ndarray          # (n_pf, 3, 3) body axes in the link frame
    sp_link_a: np.ndarray     # springs
    sp_link_b: np.ndarray
    sp_pa: np.ndarray
    sp_pb: np.ndarray
    sp_k: np.ndarray
    sp_c: np.ndarray
    sp_l0: np.ndarray
    sp_fn: np.ndarray
    jf_coord: np.ndarray      # (n_jf,) joint forces on tree coordinates
    jf_fn: np.ndarray


class RelativeWork(NamedTuple):
    """Scratch of the relative kernels (one per thread)."""
    R: np.ndarray        # (n, 3, 3) link rotations R_WL
    p: np.ndarray        # (n, 3) link origins
    S: np.ndarray        # (n, 6) world motion subspaces
    V: np.ndarray        # (n, 6) spatial velocities
    A: np.ndarray        # (n, 6) velocity-product (bias) spatial accelerations
    I: np.ndarray        # (n, 6, 6) spatial inertias about the world origin
    Ic: np.ndarray       # (n, 6, 6) composite inertias
    F: np.ndarray        # (n, 6) spatial forces
    row: np.ndarray      # (n_q,) a dense Jacobian row
    tmp: np.ndarray      # (16, 3) small vectors
    m33: np.ndarray      # (2, 3, 3) small matrices (scratch of the tree passes)
    v6: np.ndarray       # (2, 6) spatial-vector scratch of the tree passes
    freg: np.ndarray     # (n_reg, 3) registers of the function program
    fval: np.ndarray     # (n_function, 3)


def make_work(data: RelativeData) -> RelativeWork:
    n = data.n_q
    return RelativeWork(np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 6)), np.zeros((n, 6)),
                        np.zeros((n, 6)), np.zeros((n, 6, 6)), np.zeros((n, 6, 6)),
                        np.zeros((n, 6)), np.zeros(n), np.zeros((16, 3)),
                        np.zeros((2, 3, 3)), np.zeros((2, 6)),
                        np.zeros((len(data.fp_op), 3)), np.zeros((len(data.fp_out), 3)))


class Equation(NamedTuple):
    kind: int
    body_a: int
    body_b: int
    pa: np.ndarray
    pb: np.ndarray
    ua: np.ndarray
    vb: np.ndarray
    value: float
    coord: int
    fn: int
    name: str
    owner: str


def _perpendiculars(axis):
    F = frame_from_axis(axis)
    return F[:, 0], F[:, 1]


def cut_equations(tree: JointTree, j: int) -> list[Equation]:
    """Loop-closure equations of cut joint j (body frames of a and b)."""
    m = tree.model
    a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
    jt = m.joint_type_name(j)
    name = m.joint_name[j]
    pa = tree.point(m.joint_point_a[j]) if m.joint_point_a[j] >= 0 else np.zeros(3)
    pb = tree.point(m.joint_point_b[j]) if m.joint_point_b[j] >= 0 else np.zeros(3)
    z = np.zeros(3)
    d2 = m.dim == 2
    out = []

    def eq(kind, ua=z, vb=z, value=0.0, label=""):
        out.append(Equation(kind, a, b, pa, pb, np.asarray(ua, float), np.asarray(vb, float),
                            float(value), -1, -1, f"{name}: {label}", name))

    def points(n):
        for c in range(n):
            eq(POINT, np.eye(3)[c], label="xyz"[c])
    RAB = lift_rotation(m.joint_rotation[j])
    ax_a = lift_vector(m.joint_axis_a[j]) if jt not in ("revolute",) or not d2 else None
    if jt == "revolute":
        points(2 if d2 else 3)
        if not d2:
            n1, n2 = _perpendiculars(m.joint_axis_a[j])
            eq(DOT, n1, m.joint_axis_b[j], label="axis 1")
            eq(DOT, n2, m.joint_axis_b[j], label="axis 2")
    elif jt == "spherical":
        points(3)
    elif jt == "universal":
        points(3)
        eq(DOT, m.joint_axis_a[j], m.joint_axis_b[j], label="cross")
    elif jt in ("prismatic", "cylindrical"):
        if d2:
            n1 = np.array([-ax_a[1], ax_a[0], 0.0])
            eq(DOTD, n1, label="line")
            eq(DOT, n1, RAB.T @ ax_a, label="rotation")
        else:
            n1, n2 = _perpendiculars(ax_a)
            eq(DOTD, n1, label="line 1")
            eq(DOTD, n2, label="line 2")
            eq(DOT, n1, lift_vector(m.joint_axis_b[j]), label="axis 1")
            eq(DOT, n2, lift_vector(m.joint_axis_b[j]), label="axis 2")
            if jt == "prismatic":
                eq(DOT, n1, RAB.T @ n2, label="twist")
    elif jt == "fixed":
        points(2 if d2 else 3)
        E = np.eye(3)
        for k in ((0,) if d2 else (0, 1, 2)):
            eq(DOT, E[k], RAB.T @ E[(k + 1) % 3], label=f"rotation {k}")
    elif jt == "rod":
        eq(DIST, value=float(m.joint_length[j]) ** 2, label="length")
    elif jt != "free":
        raise ModelError(f"cut joint {name!r}: type {jt} not supported in relative coordinates",
                         location=f"joints[{j}]")
    return out


def driver_equations(tree: JointTree) -> list[Equation]:
    m = tree.model
    out = []
    z = np.zeros(3)
    for k in range(m.n_driver):
        name = m.driver_name[k]
        kind = int(m.driver_kind[k])
        fn = int(m.driver_function[k, 0])
        if kind == DRIVER_CODE["joint"]:
            j, comp = int(m.driver_joint[k]), int(m.driver_component[k])
            links = tree.joint_links.get(j)
            if links is None:
                raise ModelError(f"driver {name!r} drives joint {m.joint_name[j]!r}, a "
                                 "loop-closure (cut) joint: relative coordinates can drive "
                                 "only spanning-tree joints; drive another joint of the loop",
                                 location=f"drivers[{k}]")
            jt = m.joint_type_name(j)
            link = links[1 if (jt == "cylindrical" and comp == 1) else 0]
            out.append(Equation(DRIVE, 0, 0, z, z, z, z, 0.0, link, fn, f"{name}: driver", name))
        elif kind == DRIVER_CODE["distance"]:
            pa, pb = int(m.driver_point_a[k]), int(m.driver_point_b[k])
            out.append(Equation(DDIST, int(m.point_body[pa]), int(m.point_body[pb]),
                                tree.point(pa), tree.point(pb), z, z, 0.0, -1, fn,
                                f"{name}: driver", name))
        else:
            raise ModelError(f"driver {name!r}: pose drivers are not supported in relative "
                             "coordinates (drive the joints of the body's chain instead)",
                             location=f"drivers[{k}]")
    return out


def to_link(tree: JointTree, body: int, point=None, vector=None):
    """A body-frame point or vector in the frame of the body's link (world for the ground)."""
    R, r = tree.body_R[body], tree.body_r[body]
    if tree.body_link[body] < 0 and body == 0:
        R, r = np.eye(3), np.zeros(3)
    if point is not None:
        return r + R @ point
    return R @ vector


def link_inertias(tree: JointTree):
    """Mass, centre of mass and inertia about it of the bodies rigidly attached to each link."""
    m = tree.model
    n = tree.n
    mass, first, J = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
    for b in range(1, m.n_body):
        k = int(tree.body_link[b])
        if k < 0:
            continue  # welded to the ground
        Rb = tree.body_R[b]
        c = to_link(tree, b, point=lift_vector(m.body_com[b]))
        Ib = m.body_inertia[b]
        Ib = np.diag([0.0, 0.0, float(Ib)]) if m.dim == 2 else np.asarray(Ib, float)
        mb = float(m.body_mass[b])
        # inertia about the link origin, then shifted back to the combined centre below
        J[k] += Rb @ Ib @ Rb.T + mb * (c @ c * np.eye(3) - np.outer(c, c))
        mass[k] += mb
        first[k] += mb * c
    com = np.where(mass[:, None] > 0, first / np.where(mass > 0, mass, 1.0)[:, None], 0.0)
    for k in range(n):
        c = com[k]
        J[k] -= mass[k] * (c @ c * np.eye(3) - np.outer(c, c))
    return mass, com, J


def composite_representatives(parent, mass):
    """CRBA bookkeeping: a massless link with a single child (inside a multi-coordinate joint,
    e.g. the five outer links of a free joint) has the composite inertia of that child, so
    only *representatives* (links with mass or branching) sum composites. Returns ``rep``
    (n,) and, for each representative, the representative it adds into (-1 the ground)."""
    n = len(parent)
    children = [[] for _ in range(n)]
    for k in range(n):
        if parent[k] >= 0:
            children[parent[k]].append(k)
    rep = np.arange(n, dtype=np.int64)
    for k in range(n - 1, -1, -1):
        if mass[k] == 0.0 and len(children[k]) == 1:
            rep[k] = rep[children[k][0]]
    up = np.full(n, -1, np.int64)
    for k in range(n):
        if rep[k] == k:
            a = parent[k]
            while a >= 0 and rep[a] == k:
                a = parent[a]
            up[k] = rep[a] if a >= 0 else -1
    return rep, up


def jacobian_pattern(tree: JointTree, equations: list[Equation], coord: np.ndarray):
    """CSR pattern of B: a row touches the coordinates of every link below its bodies."""
    indptr, indices = [0], []
    for e in equations:
        if e.kind == DRIVE:
            cols = {int(coord[e.coord])}
        else:
            cols = set()
            for body in (e.body_a, e.body_b):
                cols |= {int(coord[k]) for k in tree.ancestors(int(tree.body_link[body]))}
        indices += sorted(cols)
        indptr.append(len(indices))
    return np.array(indptr, np.int64), np.array(indices, np.int64)


def mass_pattern(tree: JointTree, coord: np.ndarray):
    n = tree.n
    C = tree.coupling()
    P = np.zeros((n, n), bool)
    P[np.ix_(coord, coord)] = C
    M = sps.csr_matrix(P.astype(float))
    M.sort_indices()
    pos_coord = np.full((n, n), -1, np.int64)
    for i in range(n):
        for p in range(M.indptr[i], M.indptr[i + 1]):
            pos_coord[i, M.indices[p]] = p
    pos_link = pos_coord[np.ix_(coord, coord)]   # indexed by links
    return M.indptr.astype(np.int64), M.indices.astype(np.int64), pos_link


def force_arrays(tree: JointTree) -> dict:
    m = tree.model
    d = m.dim
    as_int = lambda x: np.array(x, np.int64)  # noqa: E731
    n_pf = len(m.point_force_name)
    pf_fn = np.full((n_pf, 3), -1, np.int64)
    pf_fn[:, :d] = np.asarray(m.point_force_function, np.int64).reshape(n_pf, d)
    pf_body = [int(m.point_force_body[i]) for i in range(n_pf)]
    pf_point = [to_link(tree, b, point=tree.point(int(m.point_force_point[i])))
                for i, b in enumerate(pf_body)]
    pf_R = [tree.body_R[b] if b else np.eye(3) for b in pf_body]
    n_sp = len(m.spring_name)
    sa = [int(m.point_body[m.spring_point_a[i]]) for i in range(n_sp)]
    sb = [int(m.point_body[m.spring_point_b[i]]) for i in range(n_sp)]
    jf_coord = []
    for i in range(len(m.joint_force_name)):
        j, comp = int(m.joint_force_joint[i]), int(m.joint_force_component[i])
        links = tree.joint_links.get(j)
        if links is None:
            raise ModelError(f"joint force {m.joint_force_name[i]!r} acts on a loop-closure "
                             "(cut) joint: not supported in relative coordinates",
                             location=f"forces: {m.joint_force_name[i]}")
        jt = m.joint_type_name(j)
        jf_coord.append(links[1 if (jt == "cylindrical" and comp == 1) else 0])
    if m.user_forces:
        raise ModelError("user forces are not supported by the relative formulation's compiled "
                         "kernels", location="user_forces")
    return dict(
        pf_link=as_int([tree.body_link[b] if b else -1 for b in pf_body]),
        pf_point=np.array(pf_point, float).reshape(-1, 3), pf_fn=pf_fn,
        pf_frame=as_int(m.point_force_frame).reshape(-1),
        pf_R=np.array(pf_R, float).reshape(-1, 3, 3),
        sp_link_a=as_int([tree.body_link[b] if b else -1 for b in sa]),
        sp_link_b=as_int([tree.body_link[b] if b else -1 for b in sb]),
        sp_pa=np.array([to_link(tree, sa[i], point=tree.point(m.spring_point_a[i]))
                        for i in range(n_sp)], float).reshape(-1, 3),
        sp_pb=np.array([to_link(tree, sb[i], point=tree.point(m.spring_point_b[i]))
                        for i in range(n_sp)], float).reshape(-1, 3),
        sp_k=np.asarray(m.spring_stiffness, float), sp_c=np.asarray(m.spring_damping, float),
        sp_l0=np.asarray(m.spring_free_length, float), sp_fn=as_int(m.spring_function),
        jf_coord=as_int(jf_coord), jf_fn=as_int(m.joint_force_function))


def build_data(tree: JointTree, equations: list[Equation], coord: np.ndarray) -> RelativeData:
    """The compiled arrays, coordinates numbered by ``coord`` (link -> coordinate)."""
    m: CompiledModel = tree.model
    n = tree.n
    lk = lambda b: int(tree.body_link[b]) if b else -1  # noqa: E731
    ea = [to_link(tree, e.body_a, point=e.pa) for e in equations]
    eb = [to_link(tree, e.body_b, point=e.pb) for e in equations]
    ua = [e.ua if e.kind == POINT else to_link(tree, e.body_a, vector=e.ua) for e in equations]
    vb = [to_link(tree, e.body_b, vector=e.vb) for e in equations]
    mass, com, inertia = link_inertias(tree)
    rep, rep_parent = composite_representatives(tree.link_parent, mass)
    jp, ji = jacobian_pattern(tree, equations, coord)
    mp, mi, mpos = mass_pattern(tree, coord)
    arr = lambda x, shape: np.array(x, float).reshape(shape)  # noqa: E731
    return RelativeData(
        dim=m.dim, n_q=n, link_parent=np.array(tree.link_parent, np.int64),
        link_coord=np.asarray(coord, np.int64), link_type=np.array(tree.link_type, np.int64),
        link_axis=arr(tree.link_axis, (n, 3)), link_Rf=arr(tree.link_Rf, (n, 3, 3)),
        link_rf=arr(tree.link_rf, (n, 3)), link_mass=mass, link_com=com, link_inertia=inertia,
        link_rep=rep, rep_parent=rep_parent,
        gravity=lift_vector(m.gravity),
        con_kind=np.array([e.kind for e in equations], np.int64),
        con_link_a=np.array([lk(e.body_a) for e in equations], np.int64),
        con_link_b=np.array([lk(e.body_b) for e in equations], np.int64),
        con_pa=arr(ea, (-1, 3)), con_pb=arr(eb, (-1, 3)), con_ua=arr(ua, (-1, 3)),
        con_vb=arr(vb, (-1, 3)), con_value=np.array([e.value for e in equations], float),
        con_coord=np.array([e.coord for e in equations], np.int64),
        con_fn=np.array([e.fn for e in equations], np.int64),
        jac_indptr=jp, jac_indices=ji, mass_indptr=mp, mass_indices=mi, mass_pos=mpos,
        **program_arrays(m.functions.ops, m.functions.args, m.functions.start, m.name),
        fp_input=m.functions.inputs,
        **force_arrays(tree))
