"""Natural coordinates for a compiled model: which points and vectors are coordinates, and every
constraint equation written on them.

The choice follows Garcia de Jalon's natural coordinates: bodies are described by *basic points
and unit vectors* in world coordinates, shared between bodies at joints, so that a revolute joint
(2-D) or a spherical joint costs no equation at all and the mass matrix is constant.

1. **Locations.** Joints that make two body points coincide (revolute, spherical, universal,
   fixed) merge them into one point *location*; joints whose axes coincide (revolute and
   cylindrical in 3-D, prismatic in 2-D and 3-D) merge the axes into one vector location.
   Universal-joint cross axes are single-body vector locations. A location touching the ground
   is fixed.
2. **Frames.** Each moving body gets a frame: an origin and ``dim`` independent directions (one
   in 2-D, the second being its +90 deg rotation), chosen greedily from its locations - fixed
   points first, then shared points, shared vectors, joint vectors - completed with body-owned
   unit vectors where the locations do not span space. A body driven by a ``pose`` driver uses
   its own origin and axes (the pose then gives ``dim + dim**2`` linear equations, as for the
   Stewart terminal of the Group Equations paper). Locations chosen by some frame become
   coordinate blocks (``dim`` entries of q each).
3. **Equations.** Rigid-body equations (constant dot products of the frame directions); linear
   equations tying a body's other locations to its frame; joint equations (prismatic line and
   rotation lock, universal perpendicularity, fixed rotation lock, rod length, axis alignment
   where an axis is not a shared block); driver equations (joint angle, joint displacement,
   distance, pose). Everything is written with :class:`~.entities.Entity` linear expressions,
   so equations have three kinds only: LINEAR (a component of an entity), DOT (``e1.e2 - f``)
   and ANGLE (``sin(theta) e1.e2 - cos(theta) [e1 e2 e3]``). Duplicate equations are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ModelError
from ...model.compiled import DRIVER_CODE, JOINT_CODE, CompiledModel
from .entities import J2, Entity, combination

LINEAR, DOT, ANGLE = 0, 1, 2
KIND_NAME = {LINEAR: "linear", DOT: "dot", ANGLE: "angle"}
_POINT_JOINTS = {JOINT_CODE[k] for k in ("revolute", "spherical", "universal", "fixed")}
_AXIS_JOINTS = {2: {JOINT_CODE["prismatic"]},
                3: {JOINT_CODE[k] for k in ("revolute", "prismatic", "cylindrical")}}
_ROUND = 12


@dataclass
class Block:
    """A coordinate block: ``dim`` consecutive entries of q holding a point or a unit vector."""
    kind: str            # "point" or "vector"
    name: str
    value: np.ndarray    # initial world value


@dataclass
class Location:
    """Body points (or axes) that a joint makes coincide."""
    kind: str                                   # "point" or "vector"
    members: list = field(default_factory=list)  # (body, local (d,), sign)
    fixed: np.ndarray | None = None             # world value when it touches the ground
    block: int = -1                             # coordinate block, once a frame uses it
    name: str = ""


@dataclass
class Frame:
    """origin + directions of a moving body, as entities, with their body-local counterparts."""
    origin: Entity
    local_origin: np.ndarray
    directions: list[Entity]
    local_directions: np.ndarray  # (d, n_dir)
    elements: list = field(default_factory=list)  # ("location", id) or ("own", block)

    def _coefficients(self, v: np.ndarray) -> np.ndarray:
        D = self.local_directions
        if D.shape == (2, 1):
            D = np.column_stack([D[:, 0], J2 @ D[:, 0]])
        return np.linalg.solve(D, v)

    def vector(self, v: np.ndarray) -> Entity:
        c = self._coefficients(np.asarray(v, float))
        dirs = self.directions if len(self.directions) == len(c) else \
            [self.directions[0], self.directions[0].perp()]
        return combination(c, dirs)

    def point(self, xi: np.ndarray) -> Entity:
        return self.origin + self.vector(np.asarray(xi, float) - self.local_origin)


@dataclass
class Equation:
    kind: int
    entities: tuple[Entity, ...]
    name: str
    comp: int = 0
    value: float = 0.0              # constant target
    functions: tuple[int, int] = (-1, -1)  # model/extra function ids (see NaturalLayout.functions)
    owner: str = ""                 # "body:<name>", "joint:<name>", "driver:<name>", "location"


class NaturalLayout:
    """Coordinates, frames and equations of a model in natural coordinates (built once).

    Attributes: ``blocks`` (coordinate blocks; q has ``dim * len(blocks)`` entries),
    ``frames`` (per body, None for the ground), ``equations``, ``extra_functions`` (functions of
    time derived from the model's: ``(op, model_function_id)`` with op "sin", "cos", "square").
    """

    def __init__(self, model: CompiledModel):
        self.model = model
        self.dim = d = model.dim
        self.blocks: list[Block] = []
        self.extra_functions: list[tuple[str, int]] = []
        self._pose_driver = {int(model.driver_body[k]): k for k in range(model.n_driver)
                             if model.driver_kind[k] == DRIVER_CODE["pose"]}
        self._R = model.body_rotation
        self._p = model.body_position
        self._locations()
        self.frames: list[Frame | None] = [None] * model.n_body
        for b in range(1, model.n_body):
            self.frames[b] = self._frame(b)
        self._framed = self._framing_bodies()
        self.equations: list[Equation] = []
        self._seen: set = set()
        for b in range(1, model.n_body):
            self._body_equations(b)
        for loc in self.point_locations:
            self._point_location_equations(loc)
        for loc in self.vector_locations:
            self._vector_location_equations(loc)
        for j in range(model.n_joint):
            self._joint_equations(j)
        for k in range(model.n_driver):
            self._driver_equations(k)
        self.n_q = d * len(self.blocks)
        self.q0 = np.concatenate([b.value for b in self.blocks]) if self.blocks else np.zeros(0)

    # ---- geometry helpers ------------------------------------------------------------------
    def world_point(self, body: int, xi) -> np.ndarray:
        return self._p[body] + self._R[body] @ np.asarray(xi, float)

    def world_vector(self, body: int, v) -> np.ndarray:
        return self._R[body] @ np.asarray(v, float)

    def entity_point(self, body: int, xi) -> Entity:
        """The world position of body-local point ``xi`` as an entity."""
        if body == 0:
            return Entity.constant(self.world_point(0, xi))
        return self.frames[body].point(xi)

    def entity_vector(self, body: int, v) -> Entity:
        if body == 0:
            return Entity.constant(self.world_vector(0, v))
        return self.frames[body].vector(v)

    def _new_block(self, kind: str, name: str, value) -> int:
        self.blocks.append(Block(kind, name, np.asarray(value, float)))
        return len(self.blocks) - 1

    def _perpendiculars(self, v: np.ndarray) -> list[np.ndarray]:
        """Unit vectors completing ``v`` to an orthonormal basis (3-D: two, 2-D: one)."""
        v = v / np.linalg.norm(v)
        if self.dim == 2:
            return [J2 @ v]
        a = np.eye(3)[np.argmin(np.abs(v))]
        n1 = np.cross(v, a)
        n1 /= np.linalg.norm(n1)
        return [n1, np.cross(v, n1)]

    # ---- 1. locations ------------------------------------------------------------------------
    def _locations(self):
        m, d = self.model, self.dim
        parent: dict = {}

        def find(x):
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(x, y):
            parent[find(x)] = find(y)

        def vkey(body, v):
            v = np.asarray(v, float)
            return ("v", body, tuple(np.round(v, _ROUND)))

        order: list = []
        for j in range(m.n_joint):
            t = int(m.joint_type[j])
            a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
            if t in _POINT_JOINTS:
                ka, kb = ("p", a, int(m.joint_point_a[j])), ("p", b, int(m.joint_point_b[j]))
                order += [ka, kb]
                union(ka, kb)
            if t in _AXIS_JOINTS[d]:
                ka, kb = vkey(a, m.joint_axis_a[j]), vkey(b, m.joint_axis_b[j])
                order += [ka, kb]
                union(ka, kb)
            if t == JOINT_CODE["universal"]:  # cross axes: single-body vector locations
                for k in (vkey(a, m.joint_axis_a[j]), vkey(b, m.joint_axis_b[j])):
                    order.append(k)
                    find(k)
        groups: dict = {}
        for k in dict.fromkeys(order):
            groups.setdefault(find(k), []).append(k)
        self.point_locations: list[Location] = []
        self.vector_locations: list[Location] = []
        self.body_point_locations: list[list[int]] = [[] for _ in range(m.n_body)]
        self.body_vector_locations: list[list[int]] = [[] for _ in range(m.n_body)]
        for keys in groups.values():
            kind = "point" if keys[0][0] == "p" else "vector"
            loc = Location(kind)
            bodies_seen = set()
            ref = None
            for key in keys:
                body = key[1]
                if kind == "point":
                    local = m.point_local[key[2]]
                    label = m.point_name[key[2]]
                    sign = 1.0
                else:
                    local = np.array(key[2])
                    label = f"{m.body_name[body]}.axis{tuple(np.round(local, 3))}"
                    w = self.world_vector(body, local)
                    sign = 1.0 if ref is None or w @ ref >= 0 else -1.0
                    ref = w if ref is None else ref
                if body in bodies_seen:
                    raise ModelError(f"two different {kind}s of body {m.body_name[body]!r} are "
                                     f"joined at one location ({label}); a body cannot be "
                                     "jointed to itself")
                bodies_seen.add(body)
                loc.members.append((body, local, sign))
                if body == 0:
                    loc.fixed = (self.world_point(0, local) if kind == "point"
                                 else sign * self.world_vector(0, local))
            loc.name = "=".join(self._member_label(kind, b, l) for b, l, _ in loc.members)
            target = self.point_locations if kind == "point" else self.vector_locations
            table = self.body_point_locations if kind == "point" else self.body_vector_locations
            for body, _, _ in loc.members:
                table[body].append(len(target))
            target.append(loc)

    def _member_label(self, kind, body, local):
        m = self.model
        if kind == "point":
            for p in np.flatnonzero(m.point_body == body):  # (a loop over all was quadratic)
                # np.allclose's test (atol 1e-8, rtol 1e-5) in plain floats: np.allclose costs
                # 50 us a call, 2 ms of a four-bar's set-up
                if all(abs(x - y) <= 1e-8 + 1e-5 * abs(y)
                       for x, y in zip(m.point_local[p].tolist(), local.tolist())):
                    return m.point_name[p]
        return f"{m.body_name[body]}.<{', '.join(f'{x:.3g}' for x in local)}>"

    def _member(self, loc: Location, body: int):
        for b, local, sign in loc.members:
            if b == body:
                return local, sign
        raise KeyError(body)

    # ---- 2. frames -----------------------------------------------------------------------------
    def _frame(self, b: int) -> Frame:
        d, name = self.dim, self.model.body_name[b]
        if b in self._pose_driver:
            origin_block = self._new_block("point", f"{name}.origin", self.world_point(b, np.zeros(d)))
            axes = [self._new_block("vector", f"{name}.axis{'xyz'[k]}", self._R[b][:, k])
                    for k in range(1 if d == 2 else 3)]
            return Frame(Entity.block(origin_block, d), np.zeros(d),
                         [Entity.block(a, d) for a in axes], np.eye(d)[:, :len(axes)],
                         [("own", origin_block)] + [("own", a) for a in axes])
        points = self.body_point_locations[b]
        vectors = self.body_vector_locations[b]
        fixed_pts = [i for i in points if self.point_locations[i].fixed is not None]
        free_pts = [i for i in points if self.point_locations[i].fixed is None]
        elements: list = []
        if fixed_pts or free_pts:
            origin_loc = (fixed_pts or free_pts)[0]
            local_origin, _ = self._member(self.point_locations[origin_loc], b)
            elements.append(("point", origin_loc))
        else:
            local_origin = np.zeros(d)
            blk = self._new_block("point", f"{name}.origin", self.world_point(b, local_origin))
            elements.append(("own-point", blk))
        need = 1 if d == 2 else 3
        chosen: list[tuple] = []     # (element, local direction)
        categories = [[("point", i) for i in fixed_pts if i != origin_loc_of(elements)],
                      [("point", i) for i in free_pts if i != origin_loc_of(elements)],
                      [("vector", i) for i in vectors if self.vector_locations[i].fixed is not None],
                      [("vector", i) for i in vectors if self.vector_locations[i].fixed is None
                       and len(self.vector_locations[i].members) > 1],
                      [("vector", i) for i in vectors if len(self.vector_locations[i].members) == 1]]
        for cat in categories:
            remaining = list(cat)
            while remaining and len(chosen) < need:
                scored = []
                for el in remaining:
                    D = self._local_direction(b, el, local_origin)
                    if np.linalg.norm(D) < 1e-9:
                        continue
                    scored.append((_independence([c[1] for c in chosen] + [D]), el, D))
                if not scored:
                    break
                score, el, D = max(scored, key=lambda x: x[0])
                if score < 0.05:
                    break
                chosen.append((el, D))
                remaining.remove(el)
        while len(chosen) < need:  # complete with body-owned unit vectors
            D = _completion([c[1] for c in chosen], d)
            blk = self._new_block("vector", f"{name}.u{len(chosen) + 1}", self.world_vector(b, D))
            chosen.append((("own-vector", blk), D))
        # entities of the elements
        origin = self._element_entity(b, elements[0])
        dirs = []
        for el, D in chosen:
            e = self._element_entity(b, el)
            dirs.append(e - origin if el[0] in ("point", "own-point") else e)
            elements.append(el)
        return Frame(origin, np.asarray(local_origin, float), dirs,
                     np.column_stack([c[1] for c in chosen]), elements)

    def _local_direction(self, b, el, local_origin):
        kind, i = el
        if kind == "point":
            local, _ = self._member(self.point_locations[i], b)
            return np.asarray(local) - local_origin
        local, _ = self._member(self.vector_locations[i], b)
        return np.asarray(local)

    def _element_entity(self, b, el) -> Entity:
        d = self.dim
        kind, i = el
        if kind in ("own-point", "own-vector"):
            return Entity.block(i, d)
        loc = self.point_locations[i] if kind == "point" else self.vector_locations[i]
        _, sign = self._member(loc, b)
        if loc.fixed is not None:
            return Entity.constant(sign * loc.fixed)
        if loc.block < 0:
            local, s0 = loc.members[0][1], loc.members[0][2]
            body0 = loc.members[0][0]
            value = (self.world_point(body0, local) if kind == "point"
                     else s0 * self.world_vector(body0, local))
            loc.block = self._new_block(kind, loc.name, value)
        return Entity.block(loc.block, d) * sign

    # ---- 3. equations --------------------------------------------------------------------------
    def _add(self, eq: Equation) -> None:
        if all(e.is_constant() for e in eq.entities) and eq.functions == (-1, -1):
            r = _constant_residual(eq)
            if abs(r) > 1e-9 * max(1.0, abs(eq.value)):
                raise ModelError(f"{eq.name}: the constraint involves only fixed geometry and is "
                                 f"violated by {r:.3g} (check the ground points and axes)")
            return
        ents = tuple(e.key() for e in eq.entities)
        if eq.kind == DOT:
            ents = tuple(sorted(ents))
        key = (eq.kind, ents, eq.comp, round(eq.value, _ROUND), eq.functions)
        if key in self._seen:
            return
        self._seen.add(key)
        self.equations.append(eq)

    def _body_equations(self, b):
        m, d = self.model, self.dim
        name = m.body_name[b]
        fr = self.frames[b]
        if b in self._pose_driver:
            k = self._pose_driver[b]
            fns = m.driver_function[k]
            dname = m.driver_name[k]
            for c in range(d):
                self._add(Equation(LINEAR, (fr.origin,), f"driver {dname}: position {'xyz'[c]}",
                                   comp=c, functions=(int(fns[c]), -1), owner=f"driver:{dname}"))
            for a, axis in enumerate(fr.directions):
                for r in range(d):
                    self._add(Equation(LINEAR, (axis,),
                                       f"driver {dname}: axis {'xyz'[a]} component {'xyz'[r]}",
                                       comp=r, functions=(int(fns[d + r * d + a]), -1),
                                       owner=f"driver:{dname}"))
            return
        D = fr.local_directions
        for i in range(D.shape[1]):
            for j in range(i, D.shape[1]):
                self._add(Equation(DOT, (fr.directions[i], fr.directions[j]),
                                   f"body {name}: rigid d{i + 1}.d{j + 1}", value=float(D[:, i] @ D[:, j]),
                                   owner=f"body:{name}"))

    def _framing_bodies(self) -> dict[tuple[str, int], set[int]]:
        """{(kind, id of a location): the bodies whose frames are built on it}, in one pass
        over the frames (asked per location, a scan of every body made the layout quadratic:
        9 s of `kinedyn info` for a 3000-link chain)."""
        out: dict[tuple[str, int], set[int]] = {}
        for b, frame in enumerate(self.frames):
            for kind, i in (frame.elements if frame is not None else ()):
                if kind in ("point", "vector"):  # (not the body's own points and vectors)
                    table = self.point_locations if kind == "point" else self.vector_locations
                    out.setdefault((kind, id(table[i])), set()).add(b)
        return out

    def _point_location_equations(self, loc: Location):
        d = self.dim
        users = [(b, local) for b, local, _ in loc.members if b != 0]
        framed = set(self._framed.get(("point", id(loc)), ()))
        if loc.fixed is not None:
            ref = Entity.constant(loc.fixed)
        elif framed:
            ref = Entity.block(loc.block, d)
        else:
            b0, local0 = users[0]
            ref = self.entity_point(b0, local0)
            framed = {b0}
        for b, local in users:
            if b in framed:
                continue
            diff = self.entity_point(b, local) - ref
            for c in range(d):
                self._add(Equation(LINEAR, (diff,), f"location {loc.name}: "
                                   f"{self.model.body_name[b]} {'xyz'[c]}", comp=c, owner="location"))

    def _vector_location_equations(self, loc: Location):
        users = [(b, local, s) for b, local, s in loc.members if b != 0]
        if len(loc.members) < 2:
            return
        framed = set(self._framed.get(("vector", id(loc)), ()))
        if loc.fixed is not None:
            perps = [Entity.constant(n) for n in self._perpendiculars(loc.fixed)]
        else:
            if framed:
                b0 = min(framed)
            else:
                b0 = users[0][0]
                framed = {b0}
            local0, s0 = self._member(loc, b0)
            perps = [self.entity_vector(b0, n) for n in self._perpendiculars(local0)]
        for b, local, s in users:
            if b in framed:
                continue
            e = self.entity_vector(b, local)
            for k, n in enumerate(perps):
                self._add(Equation(DOT, (e, n), f"location {loc.name}: "
                                   f"{self.model.body_name[b]} parallel {k + 1}", owner="location"))

    def _joint_equations(self, j):
        m, d = self.model, self.dim
        t = int(m.joint_type[j])
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        name = m.joint_name[j]
        owner = f"joint:{name}"
        if t in (JOINT_CODE["prismatic"], JOINT_CODE["cylindrical"]):
            diff = (self.entity_point(b, m.point_local[m.joint_point_b[j]])
                    - self.entity_point(a, m.point_local[m.joint_point_a[j]]))
            for k, n in enumerate(self._perpendiculars(m.joint_axis_a[j])):
                self._add(Equation(DOT, (diff, self.entity_vector(a, n)),
                                   f"joint {name}: on axis {k + 1}", owner=owner))
            if t == JOINT_CODE["prismatic"] and d == 3:
                mb = self._perpendiculars(m.joint_axis_b[j])[0]
                seen_in_a = m.joint_rotation[j] @ mb
                na = np.cross(m.joint_axis_a[j], seen_in_a)
                na /= np.linalg.norm(na)
                self._add(Equation(DOT, (self.entity_vector(b, mb), self.entity_vector(a, na)),
                                   f"joint {name}: no rotation", owner=owner))
        elif t == JOINT_CODE["universal"]:
            self._add(Equation(DOT, (self.entity_vector(a, m.joint_axis_a[j]),
                                     self.entity_vector(b, m.joint_axis_b[j])),
                               f"joint {name}: cross axes perpendicular", owner=owner))
        elif t == JOINT_CODE["fixed"]:
            R = m.joint_rotation[j]  # R_AB: B's axes seen in A
            pairs = [(0, 1)] if d == 2 else [(0, 1), (0, 2), (1, 2)]
            for u, v in pairs:
                self._add(Equation(DOT, (self.entity_vector(b, np.eye(d)[u]),
                                         self.entity_vector(a, R[:, v])),
                                   f"joint {name}: no rotation {'xyz'[u]}{'xyz'[v]}", owner=owner))
        elif t == JOINT_CODE["rod"]:
            diff = (self.entity_point(b, m.point_local[m.joint_point_b[j]])
                    - self.entity_point(a, m.point_local[m.joint_point_a[j]]))
            self._add(Equation(DOT, (diff, diff), f"joint {name}: rod length",
                               value=float(m.joint_length[j] ** 2), owner=owner))

    def _extra(self, op: str, fid: int) -> int:
        """Id of a derived function of time (ids >= n_model_functions)."""
        key = (op, int(fid))
        if key not in self.extra_functions:
            self.extra_functions.append(key)
        return len(self.model.functions) + self.extra_functions.index(key)

    def _driver_equations(self, k):
        m = self.model
        kind = int(m.driver_kind[k])
        name = m.driver_name[k]
        owner = f"driver:{name}"
        fid = int(m.driver_function[k, 0])
        if kind == DRIVER_CODE["joint"]:
            j = int(m.driver_joint[k])
            self._add(self.joint_coordinate_equation(j, int(m.driver_component[k]),
                                                     fid, f"driver {name}", owner))
        elif kind == DRIVER_CODE["distance"]:
            pa, pb = int(m.driver_point_a[k]), int(m.driver_point_b[k])
            diff = (self.entity_point(int(m.point_body[pb]), m.point_local[pb])
                    - self.entity_point(int(m.point_body[pa]), m.point_local[pa]))
            self._add(Equation(DOT, (diff, diff), f"driver {name}: distance",
                               functions=(self._extra("square", fid), -1), owner=owner))

    def joint_coordinate_equation(self, j: int, component: int, fid: int, name: str,
                                  owner: str = "") -> Equation:
        """``coordinate(q) = f(t)`` for a revolute/cylindrical angle (component 0) or a
        prismatic/cylindrical displacement (component 1)."""
        m = self.model
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        is_angle = component == 0 and m.joint_type[j] != JOINT_CODE["prismatic"]
        if is_angle:
            ents = [self.entity_vector(a, m.joint_ref_a[j]), self.entity_vector(b, m.joint_ref_b[j])]
            if self.dim == 3:
                ents.append(self.entity_vector(a, m.joint_axis_a[j]))
            return Equation(ANGLE, tuple(ents), f"{name}: angle",
                            functions=(self._extra("sin", fid), self._extra("cos", fid)), owner=owner)
        diff = (self.entity_point(b, m.point_local[m.joint_point_b[j]])
                - self.entity_point(a, m.point_local[m.joint_point_a[j]]))
        return Equation(DOT, (diff, self.entity_vector(a, m.joint_axis_a[j])),
                        f"{name}: displacement", functions=(fid, -1), owner=owner)


def origin_loc_of(elements):
    kind, i = elements[0]
    return i if kind == "point" else None


def _independence(dirs: list[np.ndarray]) -> float:
    """Smallest singular value of the normalised directions (1 = orthogonal, 0 = dependent)."""
    A = np.column_stack([v / np.linalg.norm(v) for v in dirs])
    return float(np.linalg.svd(A, compute_uv=False)[-1])


def _completion(dirs: list[np.ndarray], d: int) -> np.ndarray:
    """A local unit vector independent of ``dirs`` (perpendicular to them where possible)."""
    if d == 2 or not dirs:
        return np.eye(d)[0] if not dirs else J2 @ (dirs[0] / np.linalg.norm(dirs[0]))
    if len(dirs) == 2:
        n = np.cross(dirs[0], dirs[1])
        return n / np.linalg.norm(n)
    v = dirs[0] / np.linalg.norm(dirs[0])
    a = np.eye(3)[np.argmin(np.abs(v))]
    n = np.cross(v, a)
    return n / np.linalg.norm(n)


def _constant_residual(eq: Equation) -> float:
    vals = [e.const for e in eq.entities]
    if eq.kind == LINEAR:
        return float(vals[0][eq.comp] - eq.value)
    if eq.kind == DOT:
        return float(vals[0] @ vals[1] - eq.value)
    return 0.0
