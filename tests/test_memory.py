"""Result arrays are mapped before the timed run writes them (kinedyn._memory)."""
from __future__ import annotations

import resource

import numpy as np
import pytest

from kinedyn._memory import resident_zeros
from kinedyn.kinematics import kernels as K


def _faults_while_writing(a: np.ndarray) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a.fill(1)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_resident_zeros_are_zeros_of_the_requested_shape_and_type():
    a = resident_zeros((3, 4))
    b = resident_zeros(5, np.int64)
    assert a.shape == (3, 4) and a.dtype == np.float64 and not a.any()
    assert b.shape == (5,) and b.dtype == np.int64 and not b.any()


def test_writing_resident_zeros_maps_no_new_pages():
    """A run's first write to its results must not fault memory in (about 2.4 µs per 4 KB
    page here): writing 64 MB of fresh np.zeros faults hundreds of times (a fault maps one page
    or one larger folio, depending on the kernel), writing resident_zeros almost never."""
    n = (64 << 20) // 8
    fresh = np.zeros(n)
    faults = _faults_while_writing(fresh)
    assert faults >= 32  # the effect exists on this system (at most 2 MB per fault)
    del fresh
    assert _faults_while_writing(resident_zeros(n)) < faults // 10


def test_kinematic_outputs_are_resident_zeros():
    outs = K.outputs(2000, 600)
    assert [o.shape for o in outs] == [(2000, 600)] * 3 + [(2000,)] * 2
    assert outs[4].dtype == np.int64 and not any(o.any() for o in outs)
    assert _faults_while_writing(outs[0]) < 30  # 9.6 MB: 299 faults here if fresh


def test_results_larger_than_the_memory_available_are_refused_before_the_run(monkeypatch):
    """A mistyped dt (1e-9 s over a second: 1e9 steps) is a ModelError that says how much
    memory the results would take, before anything is allocated or run."""
    import kinedyn
    import kinedyn._memory as memory
    from kinedyn.dynamics.simulation import Dynamics
    from kinedyn.errors import ModelError
    from kinedyn.kinematics.analysis import Kinematics
    assert memory.available_bytes() > 0  # this system can tell
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**30)
    kin = Kinematics(kinedyn.models.get("four-bar-driven").compile())
    with pytest.raises(ModelError, match=r"100,000,001 recorded steps\) need [\d.]+ GB, more "
                                         r"than the 1 GB of memory available: use a larger dt"):
        kin.simulate(1.0, 1e-8)
    dyn = Dynamics(kinedyn.models.get("four-bar").compile())
    with pytest.raises(ModelError, match="memory available"):
        dyn.simulate(1.0, 1e-8)
