"""kinedyn._compile_gc: the cyclic garbage collector is paused while Numba compiles, for the
outermost compilation and every one nested in it, and is as before once it ends - also after a
compilation that fails, and disabled still when the user had disabled it."""
import gc

import numba as nb
import numpy as np
import pytest
from numba.core import event

import kinedyn  # noqa: F401  (installs the listener)
from kinedyn._compile_gc import LISTENER


class _Seen(event.Listener):
    """Whether the collector was enabled at each compilation's start (registered after
    kinedyn's listener, so it sees what that one set)."""

    def __init__(self):
        self.enabled = []

    def on_start(self, ev):
        self.enabled.append(gc.isenabled())

    def on_end(self, ev):
        pass


@pytest.fixture
def seen():
    listener = _Seen()
    with event.install_listener("numba:compile", listener):
        yield listener


def _fresh_kernels():
    """A kernel calling a helper, both new (so both are compiled: two nested compilations)."""
    @nb.njit
    def helper(x):
        return 2.0 * x

    @nb.njit
    def kernel(a):
        s = 0.0
        for v in a:
            s += helper(v)
        return s

    return kernel


def test_paused_while_compiling_and_resumed_after(seen):
    assert LISTENER.installed and gc.isenabled()
    assert _fresh_kernels()(np.arange(4.0)) == 12.0
    assert seen.enabled == [False, False]  # the kernel, then its helper inside it
    assert gc.isenabled() and LISTENER.depth == 0


def test_resumed_after_a_failed_compilation(seen):
    @nb.njit
    def wrong(x):
        return x + "text"

    with pytest.raises(nb.core.errors.TypingError):
        wrong(1.0)
    assert seen.enabled == [False]
    assert gc.isenabled() and LISTENER.depth == 0


def test_a_collector_the_user_disabled_stays_disabled(seen):
    gc.disable()
    try:
        assert _fresh_kernels()(np.ones(3)) == 6.0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen.enabled == [False, False]


def test_installed_once():
    kinedyn._compile_gc.install()
    assert sum(x is LISTENER for x in event._registered["numba:compile"]) == 1
