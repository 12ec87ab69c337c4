"""The cases of a design study: a grid of values, random samples, or both.

A study varies named *parameters* of a model (its geometry, masses, stiffnesses: the model is
compiled again for each case) and named *inputs* (values its forces read, set on the compiled
model). ``vary`` gives each name a list of values and the cases are their Cartesian product
(the first name varies slowest, as ``itertools.product``); ``sample`` gives each name a
distribution and draws ``samples`` cases from them (Monte Carlo, or a Latin hypercube). Given
both, every grid point is combined with the same samples (common random numbers: the designs
are compared on the same scatter).
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError, UnknownNameError

#: distribution name -> (its arguments, the frozen SciPy distribution they make)
DISTRIBUTIONS = {
    "normal": ("mean, std", lambda st, mean, std: st.norm(loc=mean, scale=std)),
    "uniform": ("low, high", lambda st, low, high: st.uniform(loc=low, scale=high - low)),
    "triangular": ("low, mode, high", lambda st, low, mode, high: st.triang(
        (mode - low) / (high - low), loc=low, scale=high - low)),
}

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class Cases:
    """The values of every case: ``values[i, j]`` is name ``names[j]`` in case ``i``;
    ``kinds[j]`` is ``"parameter"`` or ``"input"``."""
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    values: np.ndarray          # (n_cases, n_names)
    design: dict                # how they were made (for the summary)

    def __len__(self) -> int:
        return len(self.values)

    def overrides(self, i: int) -> tuple[dict[str, float], dict[str, float]]:
        """The parameters and the inputs of case ``i``."""
        out = {"parameter": {}, "input": {}}
        for name, kind, value in zip(self.names, self.kinds, self.values[i]):
            out[kind][name] = float(value)
        return out["parameter"], out["input"]


def make_cases(system, vary=None, sample=None, samples: int | None = None, seed: int = 0,
               lhs: bool = False) -> Cases:
    """The cases of a study of ``system`` (a :class:`~kinedyn.model.System`).

    ``vary``: name -> values (a sequence, or a string ``"start:stop:n"`` / ``"v1,v2"``).
    ``sample``: name -> distribution (``"normal(0.3, 0.002)"``, ``("uniform", 0.1, 0.2)``; see
    :data:`DISTRIBUTIONS`), ``samples`` of them drawn with ``seed``, by a Latin hypercube when
    ``lhs``. Names are the model's parameters or inputs; anything wrong is a ModelError naming
    the entry.
    """
    vary = _mapping(vary, "vary")
    sample = _mapping(sample, "sample")
    if not vary and not sample:
        raise ModelError("a study needs something to vary: 'vary' (a grid of values) or "
                         "'sample' (distributions) of the model's parameters or inputs")
    names = list(vary) + list(sample)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ModelError(f"{', '.join(repeated)} given both in 'vary' and in 'sample'")
    kinds = tuple(_kind(system, n) for n in names)
    axes = [grid_values(spec, f"vary.{name}") for name, spec in vary.items()]
    points = list(itertools.product(*axes))  # one empty point when nothing is varied
    grid = np.array(points, dtype=float).reshape(len(points), len(axes))
    design = {"grid": {n: a.tolist() for n, a in zip(vary, axes)}}
    if sample:
        draws = _draw(sample, samples, seed, lhs)
        grid = np.array([np.concatenate([g, d]) for g in grid for d in draws])
        design.update(sample={n: _text(s) for n, s in sample.items()}, samples=len(draws),
                      seed=seed, lhs=bool(lhs))
    elif samples is not None:
        raise ModelError("'samples' counts draws of 'sample' distributions; none were given")
    return Cases(tuple(names), kinds, grid, design)


def grid_values(spec, where: str) -> np.ndarray:
    """The values of one grid axis: a sequence of numbers, a number, or a string
    ``"start:stop:n"`` (n values, both ends included) or ``"v1,v2,..."``."""
    if isinstance(spec, str):
        text = spec.strip()
        if text.count(":") == 2:
            start, stop, n = (s.strip() for s in text.split(":"))
            count = _number(n, where, "the count of start:stop:n")
            if count != int(count) or count < 1:
                raise ModelError(f"start:stop:n needs a whole number n >= 1, got {n!r}",
                                 location=where)
            return np.linspace(_number(start, where), _number(stop, where), int(count))
        spec = [s for s in text.split(",")]
    values = np.atleast_1d(np.asarray(spec, dtype=object))
    if values.ndim != 1 or not len(values):
        raise ModelError(f"expected numbers, 'start:stop:n' or 'v1,v2,...', got {spec!r}",
                         location=where)
    return np.array([_number(v, where) for v in values])


def distribution(spec, where: str):
    """A frozen SciPy distribution from ``"normal(0.3, 0.002)"`` or ``("normal", 0.3, 0.002)``."""
    from scipy import stats
    if isinstance(spec, str):
        match = _CALL.match(spec)
        if not match:
            raise ModelError(f"expected a distribution such as normal(mean, std), got {spec!r}",
                             location=where)
        kind, args = match.group(1), [a for a in match.group(2).split(",") if a.strip()]
    elif isinstance(spec, Sequence) and spec and isinstance(spec[0], str):
        kind, args = spec[0], list(spec[1:])
    else:
        raise ModelError(f"expected a distribution such as 'normal(mean, std)' or "
                         f"('normal', mean, std), got {spec!r}", location=where)
    if kind not in DISTRIBUTIONS:
        raise UnknownNameError("distribution", kind, DISTRIBUTIONS, location=where)
    signature, make = DISTRIBUTIONS[kind]
    if len(args) != signature.count(",") + 1:
        raise ModelError(f"{kind} takes ({signature}), got {len(args)} argument(s)",
                         location=where)
    x = [_number(a, where) for a in args]
    if kind == "normal" and not x[1] > 0:
        raise ModelError(f"normal needs std > 0, got {x[1]:g}", location=where)
    if kind != "normal" and not (x[0] < x[-1] and x[0] <= x[len(x) // 2] <= x[-1]):
        raise ModelError(f"{kind} needs {signature.replace(', ', ' <= ')} with low < high, "
                         f"got {', '.join(f'{v:g}' for v in x)}", location=where)
    return make(stats, *x)


def _draw(sample: Mapping, samples, seed, lhs) -> np.ndarray:
    """``samples`` rows of one draw per distribution: uniform numbers in (0, 1), random or a
    Latin hypercube, mapped through each distribution's inverse CDF (one path for both)."""
    if samples is None or isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) \
            or samples < 1:
        raise ModelError(f"samples must be a whole number >= 1, got {samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ModelError(f"seed must be a whole number >= 0, got {seed!r}")
    dists = [distribution(spec, f"sample.{name}") for name, spec in sample.items()]
    if lhs:
        from scipy.stats import qmc
        u = qmc.LatinHypercube(d=len(dists), seed=np.random.default_rng(seed)).random(samples)
    else:
        u = np.random.default_rng(seed).random((samples, len(dists)))
    u = np.clip(u, 1e-16, 1.0 - 1e-16)  # the inverse CDF of 0 is -inf for a normal
    return np.column_stack([d.ppf(u[:, j]) for j, d in enumerate(dists)])


def _kind(system, name: str) -> str:
    parameters = [p.name for p in system.parameters]
    inputs = [u.name for u in system.inputs]
    if name in parameters:
        return "parameter"
    if name in inputs:
        return "input"
    raise UnknownNameError(f"parameter or input of {system.name!r}", name,
                           parameters + inputs)


def _mapping(value, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ModelError(f"{what} must be a mapping of name -> values, got "
                         f"{type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def _number(value, where: str, what: str = "a number") -> float:
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not math.isfinite(x):
        raise ModelError(f"expected {what}, got {value!r}", location=where)
    return x


def _text(spec) -> str:
    return spec if isinstance(spec, str) else f"{spec[0]}({', '.join(map(str, spec[1:]))})"
