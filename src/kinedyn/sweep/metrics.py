"""What a design study measures of each run: one number per metric.

A metric is ``REDUCTION(CHANNEL)`` over a results channel (``range(joint.slide.displacement)``,
``max(residual.position)``, ``final(body.platform.z)``, and for dynamics the joint reactions
and actuator efforts ``absmax(reaction.pin.force_y)``, ``rms(effort.motor)``), or, from
Python, any callable ``metric(results) -> float`` (it is sent to the workers, so it must be
picklable by cloudpickle: a function or a lambda, not a bound method of an open file).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError, UnknownNameError


def _rms(x):
    return np.sqrt(np.mean(np.square(x)))


#: reduction name -> (what it gives, function of the channel's samples)
REDUCTIONS = {
    "max": ("largest value", np.max),
    "min": ("smallest value", np.min),
    "absmax": ("largest magnitude", lambda x: np.max(np.abs(x))),
    "range": ("largest minus smallest (a stroke, an excursion)", np.ptp),
    "mean": ("mean over the recorded samples", np.mean),
    "rms": ("root mean square", _rms),
    "std": ("standard deviation", np.std),
    "initial": ("value at the first recorded time", lambda x: x[0]),
    "final": ("value at the last recorded time", lambda x: x[-1]),
}

_FORM = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(\s*([^()\s]+)\s*\)\s*$")
_NAME = re.compile(r"^[^,\"\n=]+$")  # a CSV column header


@dataclass(frozen=True)
class Metric:
    """``reduction`` of ``channel`` (or ``function(results)``), named ``name``."""
    name: str
    text: str
    reduction: str | None = None
    channel: str | None = None
    function: object = None

    def __call__(self, results, channels=None) -> float:
        """The metric of one run's results (``channels``: those already computed, by name);
        a ModelError naming the metric when its channel does not exist (every case would fail
        the same way)."""
        if self.function is not None:
            value = self.function(results)
        else:
            samples = (channels or {}).get(self.channel)
            if samples is None:
                try:
                    samples = results.channel(self.channel)
                except UnknownNameError as err:
                    raise err.at(location=f"metric {self.name!r}") from None
            value = REDUCTIONS[self.reduction][1](samples)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ModelError(f"metric {self.name!r} gave {value!r}, not a number") from None


#: channels a run computes only when asked (``DynamicResults.reactions``, and for a kinematic
#: run ``KinematicResults.reactions``: inverse dynamics)
LOADS = ("reaction.", "effort.")


def evaluate(metrics, results, actuators=None) -> tuple[float, ...]:
    """The ``metrics`` of one run, computing only the channels they read (and the joint
    reactions and actuator efforts, Newton-Euler, when one reads ``reaction.*`` or
    ``effort.*``: of a kinematic run, the efforts of ``actuators`` or of its drivers)."""
    wanted = {m.channel for m in metrics if m.channel}
    if any(c.startswith(LOADS) for c in wanted) and hasattr(results, "reactions"):
        results.reactions(*(() if actuators is None else (actuators,)))
    channels = results.named(wanted)
    return tuple(m(results, channels) for m in metrics)


def parse_metrics(metrics) -> tuple[Metric, ...]:
    """Metrics from a mapping name -> ``"REDUCTION(CHANNEL)"`` or callable, or a sequence of
    ``"REDUCTION(CHANNEL)"`` texts (each named by its text)."""
    if isinstance(metrics, str) or metrics is None:
        metrics = [metrics] if metrics else []
    if not isinstance(metrics, Mapping):
        metrics = {m if isinstance(m, str) else getattr(m, "__name__", str(m)): m
                   for m in metrics}
    if not metrics:
        raise ModelError("a study needs at least one metric: REDUCTION(CHANNEL), e.g. "
                         "range(joint.slide.displacement); reductions: " + ", ".join(REDUCTIONS))
    return tuple(metric(str(name), spec) for name, spec in metrics.items())


def metric(name: str, spec) -> Metric:
    """One metric named ``name`` from its text or callable."""
    if not _NAME.match(name):
        raise ModelError(f"metric name {name!r}: a name without commas, quotes, '=' or line breaks",
                         location="metrics")
    if callable(spec):
        return Metric(name, getattr(spec, "__name__", "function"), function=spec)
    match = _FORM.match(spec) if isinstance(spec, str) else None
    if not match:
        raise ModelError(f"metric {name!r}: expected REDUCTION(CHANNEL) such as "
                         f"max(body.crank.angle) or a callable, got {spec!r}", location="metrics")
    reduction, channel = match.groups()
    if reduction not in REDUCTIONS:
        raise UnknownNameError("reduction", reduction, REDUCTIONS,
                               location=f"metrics.{name}")
    return Metric(name, spec.strip(), reduction, channel)
