"""``kinedyn info MODEL --sparsity``: the non-zero pattern of the relative-coordinate mass
matrix a(q) and of the augmented matrix of eq. (3) for each coordinate numbering, as the
sparse-relative paper's Figs. 3 and 6 (text 'x' patterns and a PNG), with the bandwidth and the
fill of the DBBD Cholesky factor (Fig. 7) for each numbering."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError


def add_arguments(parser) -> None:
    parser.add_argument("--sparsity", action="store_true",
                        help="pattern of the relative-coordinate mass matrix and augmented "
                             "matrix per coordinate numbering (paper Figs. 3, 6)")


def patterns(model) -> list[dict]:
    """Per numbering: the patterns of a and of [a B^T; B 0], bandwidth, fill of L."""
    from ...formulations.relative import Relative
    from ...linalg.relative import dbbd_structure
    from ...topology.numbering import NUMBERINGS, bandwidth
    out = []
    for numbering in NUMBERINGS:
        f = Relative(model, numbering)
        a = f.mass_pattern.toarray() != 0
        B = f.jacobian_pattern.toarray() != 0
        n, m = f.n_q, f.n_c
        K = np.zeros((n + m, n + m), bool)
        K[:n, :n], K[n:, :n], K[:n, n:] = a, B, B.T
        _, _, nnz_l = dbbd_structure(a, np.argsort(f.coord)[::-1])
        out.append(dict(numbering=numbering, a=a, augmented=K, bandwidth=bandwidth(a),
                        nnz=int(a.sum()), nnz_factor=nnz_l, fill=nnz_l - (int(a.sum()) + n) // 2,
                        names=f.coordinate_names))
    return out


def _text(P) -> str:
    return "\n".join("    " + " ".join("x" if v else "." for v in row) for row in P)


def show_sparsity(model, path) -> str:
    """Text report and a picture of the patterns at ``path`` (PNG or SVG by its suffix)."""
    pats = patterns(model)
    lines = [f"sparsity of the relative-coordinate matrices (n = {len(pats[0]['a'])} "
             f"coordinates, augmented {len(pats[0]['augmented'])})"]
    for p in pats:
        lines.append(f"  numbering {p['numbering']}: nnz(a) = {p['nnz']}, bandwidth "
                     f"{p['bandwidth']}, DBBD Cholesky factor nnz {p['nnz_factor']} "
                     f"(fill-in {p['fill']})")
        if len(p["a"]) <= 40:
            lines.append(_text(p["a"]))
    _draw(pats, path, model.name)
    lines.append(f"  picture: {path}")
    return "\n".join(lines)


def _draw(pats, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(pats), figsize=(4 * len(pats), 8), squeeze=False)
    for c, p in enumerate(pats):
        for r, key in enumerate(("a", "augmented")):
            ax = axes[r, c]
            ax.spy(p[key], markersize=max(2, 120 // max(1, len(p[key]))))
            ax.set_title(f"{key} - {p['numbering']} (bw {p['bandwidth']}, fill {p['fill']})"
                         if key == "a" else f"augmented - {p['numbering']}", fontsize=9)
    fig.suptitle(f"{title}: non-zero patterns per coordinate numbering")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(ctx) -> str | None:
    if not getattr(ctx.args, "sparsity", False):
        return None
    try:
        return show_sparsity(ctx.model, ctx.picture("sparsity"))
    except ModelError as e:  # e.g. a pose driver: the other sections still print
        return f"sparsity of the relative-coordinate matrices: not available ({e})"
