"""kinedyn against MuJoCo, Pinocchio and Exudyn: the ``kinedyn bench peers`` tables, and a
picture of the four-bar's motion in every engine (RK4, dt = 1 ms).

    python benchmarks/peers.py [--quick] [--out results/peers]

Writes peers.json / peers.md and peers_four_bar.png: per engine, the crank angle's distance
from kinedyn's reference run (RK4 at dt / 10) and the loop's closure gap over time, both on
log scales. The peers are optional (``pip install -e ".[peers]"``); missing ones are skipped.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from kinedyn.bench import peers
from kinedyn.dynamics import Dynamics
from kinedyn.models import get

FLOOR = 1e-16  # log scales: exact zeros drawn at this value


def four_bar_figure(path: Path, t_end: float) -> None:
    mech = next(m for m in peers.mechanisms(()) if m.name == "four-bar")
    model = get(mech.model).compile()
    ref = Dynamics(model, method=mech.reference, integrator="rk4").simulate(
        t_end, peers.DT / 10, record_every=10)
    crank = peers._kinedyn_values(ref, mech)["crank"]
    res = mech.kinedyn(model, "rk4")[0].simulate(t_end, peers.DT)
    traces = {"kinedyn (projection)": (res.time, peers._kinedyn_values(res, mech)["crank"],
                                       res.channel("residual.position"))}
    for name, module in peers.PEERS.items():
        if module.available():
            run = module.four_bar(t_end, peers.DT, "rk4", repeat=1, sample_every=1)
            traces[f"{name} ({run.setup})"] = (run.t, run.values["crank"], run.values["gap"])
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for label, (t, angle, gap) in traces.items():
        k = np.searchsorted(ref.time, t - 1e-9)
        ax1.semilogy(t, np.maximum(np.abs(angle - crank[k]), FLOOR), label=label, lw=1)
        ax2.semilogy(t, np.maximum(np.abs(gap), FLOOR), lw=1)
    ax1.set_ylabel("|crank angle - reference| (rad)")
    ax2.set_ylabel("loop closure gap (m)")
    ax2.set_xlabel("t (s)")
    ax1.set_title(f"Free four-bar, RK4, dt = {peers.DT * 1e3:g} ms: each engine's own loop "
                  f"closure", fontsize=10)
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="RK4 only, shorter runs")
    ap.add_argument("--out", default="results/peers", help="output folder")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = peers.run(quick=args.quick, out_dir=out)
    js, md = report.write(out)
    print(report.to_markdown())
    png = out / "peers_four_bar.png"
    four_bar_figure(png, 0.2 if args.quick else 1.0)
    print(f"written: {js}, {md}, {png}")


if __name__ == "__main__":
    main()
