"""Pictures of a mechanism in motion, from any results that record its points.

Each body is drawn as the outline of its points (the joints' and markers' locations of the
model): a bar between its two extreme points when they lie on a line, the convex polygon
of its points when they span a plane, the edges of their convex hull when they span space.
Everything is read from the results' ``point.<body>.<point>.<x|y|z>`` channels, the same for
kinematics and every dynamics method and formulation, and for results read back from their
files: no model is needed. A body is rigid, so its outline is found once, at the first
sample (:func:`outline`). The ground's outline is dashed and its points are triangles.

* :func:`draw_motion`: the mechanism at a few instants over the paths of its moving points
  (stroboscopic picture; for a four-bar the coupler curves), PNG or SVG;
* :func:`animate_motion`: the mechanism moving, one frame per recorded sample up to a
  frame limit, as a GIF (Pillow, which Matplotlib installs).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelError, check_number
from ..model.system import GROUND

#: relative size below which a point cloud's extent in a direction counts as none
FLAT = 1e-9
#: the paths drawn: of at most this many moving points (evenly chosen), each through at most
#: this many samples (a million-step run or a 10 000-body platform still draws in seconds)
PATH_POINTS = 2000
PATH_SAMPLES = 2000


def outline(local: np.ndarray) -> list[tuple[int, int]]:
    """Segments ``(i, j)`` between rows of ``local`` (the points of one body, in its frame)
    that draw the body: none for fewer than two distinct points; the two extreme points of
    collinear ones; the convex polygon of coplanar ones (in 3-D too: a Stewart platform's
    plate); the edges of the convex hull of points that span space, without the diagonals
    that split a flat face into triangles."""
    from scipy.spatial import ConvexHull
    local = np.asarray(local, float)
    if len(local) < 2:
        return []
    centred = local - local.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    scale = s[0] if len(s) else 0.0
    rank = int(np.sum(s > FLAT * max(scale, 1e-300))) if scale > 0 else 0
    if rank == 0:
        return []
    if rank == 1:
        x = centred @ vt[0]
        return [(int(np.argmin(x)), int(np.argmax(x)))]
    if rank == 2:  # the hull in the points' own plane, its vertices in order around it
        hull = ConvexHull(centred @ vt[:2].T)
        v = [int(i) for i in hull.vertices]
        return list(zip(v, v[1:] + v[:1]))
    hull = ConvexHull(local)
    edges = set()
    for f, tri in enumerate(hull.simplices):
        for k in range(3):
            a, b = int(tri[k]), int(tri[(k + 1) % 3])
            other = hull.neighbors[f][(k + 2) % 3]  # the facet across edge (a, b)
            if np.dot(hull.equations[f, :3], hull.equations[other, :3]) < 1 - 1e-9:
                edges.add((min(a, b), max(a, b)))
    return sorted(edges)




class Sketch:
    """How the mechanism of ``results`` is drawn, from their channels: its points
    (``point.<body>.<point>.x|y|z``; body names hold no dot, so each name splits into body
    and point), their positions at every recorded time (:attr:`P`, (n, n_point, d)) and each
    body's outline (:func:`outline` of its points at the first sample: a rigid motion keeps
    it) as segments between point indices. No model is needed, so results read back from
    their files (:func:`kinedyn.load_results`) are drawn as well. With the ``model`` (a
    CompiledModel), a body with a single point - a Gough-Stewart leg's cylinder or piston,
    whose frame sits at its joint - is drawn from that point to its centre of mass, placed by
    the body's recorded origin and angles (``body.<body>.x|y|z`` and ``angle`` or ZYX
    ``yaw``, ``pitch``, ``roll``)."""

    def __init__(self, results, model=None):
        channels = results.channels
        self.point_names = [n[len("point."):-len(".x")] for n in channels
                            if n.startswith("point.") and n.endswith(".x")
                            and n.count(".") == 3]
        if not self.point_names:
            raise ModelError(
                f"these results record no point positions (channels point.<body>.<point>.x; "
                f"they have {len(channels)} channels, e.g. "
                f"{', '.join(list(channels)[:3]) or 'none'}), so the mechanism cannot be "
                f"drawn: draw the results of Kinematics or Dynamics")
        self.dim = 3 if f"point.{self.point_names[0]}.z" in channels else 2
        columns = [np.column_stack([channels[f"point.{name}.{c}"] for c in "xyz"[:self.dim]])
                   for name in self.point_names]
        bodies: dict[str, list[int]] = {GROUND: []}
        for p, name in enumerate(self.point_names):
            bodies.setdefault(name.split(".")[0], []).append(p)
        for body, pts in bodies.items():  # a lone point: a bar to the centre of mass
            com = _centre_of_mass(channels, model, body, self.dim) if len(pts) == 1 else None
            if com is not None and np.abs(com[0] - columns[pts[0]][0]).max() > 0:
                pts.append(len(columns))
                columns.append(com)
                self.point_names.append(f"{body}.(centre of mass)")
        self.P = np.stack(columns, axis=1)
        self.body_names = list(bodies)  # the ground first
        self.segments = []  # (n_segments, 2) point indices per body
        for pts in bodies.values():
            seg = [(pts[i], pts[j]) for i, j in outline(self.P[0, pts])] if pts else []
            self.segments.append(np.array(seg, np.int64).reshape(-1, 2))
        self.ground_points = np.array(bodies[GROUND], np.int64)
        self.moving_points = np.array([p for b, pts in bodies.items() if b != GROUND
                                       for p in pts], np.int64)


def _centre_of_mass(channels, model, body: str, dim: int):
    """World positions (n, dim) of ``body``'s centre of mass from its recorded origin and
    angles and the ``model``'s local centre of mass; None without a model or the channels."""
    if model is None or body not in model.body_name or body == GROUND:
        return None
    local = np.array(model.body_com[model.body_name.index(body)], float)  # (SciPy: writeable)
    names = [f"body.{body}.{c}" for c in "xyz"[:dim]]
    names += [f"body.{body}.angle"] if dim == 2 else [f"body.{body}.{a}"
                                                      for a in ("yaw", "pitch", "roll")]
    if not all(n in channels for n in names):
        return None
    origin = np.column_stack([channels[n] for n in names[:dim]])
    if dim == 2:
        a = channels[names[2]]
        return origin + np.column_stack([np.cos(a) * local[0] - np.sin(a) * local[1],
                                         np.sin(a) * local[0] + np.cos(a) * local[1]])
    # the recorded angles are intrinsic Z-Y-X: R = Rz(yaw) Ry(pitch) Rx(roll) per sample
    from scipy.spatial.transform import Rotation
    R = Rotation.from_euler("ZYX", np.column_stack([channels[n] for n in names[3:]]))
    return origin + R.apply(local)


def _frame_indices(n: int, frames: int) -> np.ndarray:
    """``frames`` sample indices spread evenly over ``n`` samples, first and last included."""
    return np.unique(np.round(np.linspace(0, n - 1, min(frames, n))).astype(np.int64))


def _check_count(value, name: str, least: int) -> int:
    check_number(name, value, least, whole=True)
    return int(value)


def _axes(sketch: Sketch, P: np.ndarray, title: str, size=None):
    """A figure with axes fitted to all positions ``P``, equal scales on every axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lo, hi = P.reshape(-1, sketch.dim).min(axis=0), P.reshape(-1, sketch.dim).max(axis=0)
    span = float(max((hi - lo).max(), 1e-9))
    lo, hi = lo - 0.06 * span, hi + 0.06 * span
    if sketch.dim == 2:
        fig, ax = plt.subplots(figsize=size or (7.5, 6.5))
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.grid(True, alpha=0.3)
    else:
        fig = plt.figure(figsize=size or (8, 7.5))
        ax = fig.add_subplot(projection="3d")
        mid, half = (lo + hi) / 2, (hi - lo).max() / 2
        for setter, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), mid):
            setter(c - half, c + half)
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("z (m)")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(title)
    return plt, fig, ax


def _collection(sketch: Sketch, lines, **style):
    from matplotlib.collections import LineCollection
    from mpl_toolkits.mplot3d.art3d import Line3DCollection
    return (LineCollection if sketch.dim == 2 else Line3DCollection)(lines, **style)


class _Pose:
    """The artists of one drawing of the mechanism, updated in place (the animation's frames)."""

    def __init__(self, sketch: Sketch, ax, alpha: float = 1.0):
        import matplotlib.pyplot as plt
        self.sketch = sketch
        colors = plt.get_cmap("tab10").colors
        n_body = len(sketch.segments)
        self.bodies = []
        for b in range(1, n_body):
            if len(sketch.segments[b]):
                c = _collection(sketch, [], colors=[colors[(b - 1) % 10]], linewidths=2.2,
                                alpha=alpha)
                ax.add_collection(c)
                self.bodies.append((b, c))
        self.ground = None
        if len(sketch.segments[0]):
            self.ground = _collection(sketch, [], colors="0.45", linewidths=1.2,
                                      linestyles="--", alpha=alpha)
            ax.add_collection(self.ground)
        dims = sketch.dim
        self.points = ax.plot(*([[]] * dims), "o", color="0.15", ms=3.5, alpha=alpha)[0]
        self.fixed = ax.plot(*([[]] * dims), "^", color="k", ms=7, alpha=alpha)[0]

    def update(self, X: np.ndarray) -> None:
        """Draw the mechanism at the point positions ``X`` (n_point, d)."""
        seg = self.sketch.segments
        for b, c in self.bodies:
            c.set_segments(X[seg[b]])
        if self.ground is not None:
            self.ground.set_segments(X[seg[0]])
        for artist, idx in ((self.points, self.sketch.moving_points),
                            (self.fixed, self.sketch.ground_points)):
            if self.sketch.dim == 2:
                artist.set_data(X[idx, 0], X[idx, 1])
            else:
                artist.set_data_3d(X[idx, 0], X[idx, 1], X[idx, 2])


def _paths(sketch: Sketch, ax, P: np.ndarray) -> str:
    """Thin grey paths of the moving points over the whole run (coupler curves); returns a
    note when only some points' paths are drawn (:data:`PATH_POINTS`)."""
    pts = sketch.moving_points
    if not len(pts):
        return ""
    shown = pts[_frame_indices(len(pts), PATH_POINTS)]
    samples = _frame_indices(len(P), PATH_SAMPLES)
    paths = np.swapaxes(P[np.ix_(samples, shown)], 0, 1)  # (point, time, d)
    ax.add_collection(_collection(sketch, list(paths), colors="0.6", linewidths=0.7,
                                  alpha=0.8))
    return f"; paths of {len(shown)} of {len(pts)} points" if len(shown) < len(pts) else ""


def _stamp(sketch: Sketch, ax, text: str):
    """Text in the axes' lower left corner (the times drawn)."""
    put = ax.text2D if sketch.dim == 3 else ax.text
    return put(0.01, 0.01, text, transform=ax.transAxes, fontsize=8)


def _title(results, what: str) -> str:
    s = results.summary
    name = s.get("model", "")
    how = s.get("method") or s.get("analysis") or ""
    return f"{name}: {what}" + (f" ({how})" if how else "")


def draw_motion(results, path, *, frames: int = 6, title: str | None = None,
                model=None) -> Path:
    """Draw the mechanism of ``results`` at ``frames`` instants spread over the run (first
    and last included, the later ones darker) over the paths of its moving points; save to
    ``path`` (PNG or SVG, from its suffix); ``model``: see :class:`Sketch`. Returns the
    path."""
    frames = _check_count(frames, "frames", 1)
    sketch = Sketch(results, model)
    P = sketch.P
    plt, fig, ax = _axes(sketch, P, title or _title(results, "motion"))
    note = _paths(sketch, ax, P)
    idx = _frame_indices(len(P), frames)
    t = np.asarray(results.time)
    for j, k in enumerate(idx):
        alpha = 1.0 if len(idx) == 1 else 0.25 + 0.75 * j / (len(idx) - 1)
        _Pose(sketch, ax, alpha).update(P[k])
    _stamp(sketch, ax, "t = " + ", ".join(f"{t[k]:.3g}" for k in idx) + " s" + note)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def animate_motion(results, path, *, max_frames: int = 150, fps: int | None = None,
                   title: str | None = None, model=None) -> Path:
    """Save an animation of the mechanism of ``results`` to ``path`` (GIF): at most
    ``max_frames`` frames spread evenly over the recorded samples, at ``fps`` frames per
    second (default: real time, between 2 and 25 frames per second; a short fast run plays in
    slow motion then, which the time stamp shows; a GIF holds each frame a whole number of
    hundredths of a second, so 25 is the fastest rate above 20 it plays exactly). Returns the
    path.

    The axes, their grid and the paths are drawn once; each frame restores that background and
    draws only the mechanism and the time stamp (blitting: the four-bar's 101 frames in about
    2 s instead of 18 with a whole redraw per frame)."""
    from PIL import Image
    max_frames = _check_count(max_frames, "max_frames", 2)
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ModelError(f"an animation is written as a GIF: give a path ending in .gif, "
                         f"got {str(path)!r}")
    sketch = Sketch(results, model)
    P = sketch.P
    t = np.asarray(results.time)
    idx = _frame_indices(len(P), max_frames)
    if fps is None:
        duration = float(t[idx[-1]] - t[idx[0]]) if len(idx) > 1 else 1.0
        fps = int(np.clip(round(len(idx) / max(duration, 1e-12)), 2, 25))
    fps = _check_count(fps, "fps", 1)
    plt, fig, ax = _axes(sketch, P, title or _title(results, "motion"), size=(6.4, 5.6))
    fig.set_dpi(80)
    note = _paths(sketch, ax, P)
    fig.tight_layout()
    canvas = fig.canvas
    canvas.draw()
    background = canvas.copy_from_bbox(fig.bbox)
    pose = _Pose(sketch, ax)
    stamp = _stamp(sketch, ax, "")
    dynamic = [c for _, c in pose.bodies] + [a for a in (pose.ground, pose.points, pose.fixed,
                                                          stamp) if a is not None]
    images = []  # palette images: the first frame's palette for all (the same colours)
    for k in idx:
        pose.update(P[k])
        stamp.set_text(f"t = {t[k]:.3f} s{note}")
        canvas.restore_region(background)
        for artist in dynamic:
            if sketch.dim == 3 and hasattr(artist, "do_3d_projection"):
                artist.do_3d_projection()  # what Axes3D.draw does before drawing a collection
            ax.draw_artist(artist)
        rgb = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())
        images.append(rgb.quantize(256, palette=images[0], dither=Image.Dither.NONE)
                      if images else rgb.quantize(256, dither=Image.Dither.NONE))
    plt.close(fig)
    images[0].save(path, save_all=True, append_images=images[1:],
                   duration=int(round(1000 / fps)), loop=0)
    return path
