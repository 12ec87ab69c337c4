"""A persistent team of threads running one compiled kernel each, synchronised in compiled code.

Used by the Group Equations runner (:mod:`kinedyn.kinematics.threads`, structural groups level
by level) and by threaded HDCA (:mod:`kinedyn.formulations.hamiltonian.team`, subtrees of the
assembly tree). The pattern: :class:`Team` calls ``fn(w)`` for every worker ``w`` once per
*run* - the caller's thread is worker 0, ``n - 1`` pool threads (kept alive between runs) are the
others, one thread each; it returns each worker's thread CPU time - and ``fn`` enters a
``nogil=True`` Numba kernel that does the whole run (every step, every level) without the GIL,
without Python and without allocation. Inside, workers meet at a
:func:`barrier` (all arrive before any leaves) or wait for a published counter with
:func:`wait_until` (one producer, a consumer waits until the producer has got far enough).

Synchronisation lives in a small ``int64`` array (:func:`make_sync`, aligned to 64 bytes)
accessed with LLVM atomics, every writer on its own cache line so that no two threads write the
same line: line 0 holds the sticky ``ABORT`` request, lines 1 and 2 the counters ``PROGRESS``
and ``PROGRESS_2`` for :func:`wait_until`, and line ``3 + w`` worker ``w``'s barrier arrivals
and the step at which it failed (:func:`publish_failure`: workers that never meet at a barrier
stop at the earliest failing step, :func:`first_failure`).
The barrier has no shared counter (a counter's cache line bounces between the cores on every
arrival, and a locked add stalls the arriving core): each worker publishes its own arrival and
reads the others' (on 2 cores, one line transfer each way). Waits spin with the CPU's ``pause``
hint (which keeps a spinning core from flooding the memory system and from stalling the
pipeline when the awaited line changes) ``SPINS`` times, then yield the core on every further
spin, so that an oversubscribed machine does not stall behind a spinning thread.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
import queue
import threading
import time
import weakref

import llvmlite.binding as llvm
import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from .._memory import resident_zeros
from ..errors import ModelError, check_number

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
llvm.add_symbol("kinedyn_sched_yield", ctypes.cast(_libc.sched_yield, ctypes.c_void_p).value)
sched_yield = types.ExternalFunction("kinedyn_sched_yield", types.int32())
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")
SPINS = 1000  # pause-spins before yielding the core (a pause is ~10-140 cycles by CPU: 5-50 us)

LINE = 8  # int64 slots per 64-byte cache line
ABORT = 0
PROGRESS, PROGRESS_2 = LINE, 2 * LINE  # counters for wait_until, one cache line each
_ARRIVALS = 3 * LINE  # worker w's barrier arrivals: slots _ARRIVALS + LINE w + (0, 1)
_FAILED = 2  # worker w's failing step + 1 (0: none): slot _ARRIVALS + LINE w + _FAILED
NEVER = np.iinfo(np.int64).max  # first_failure when no worker failed
MAX_WORKERS = 64


def check_workers(name: str, value) -> None:
    """A :class:`~kinedyn.errors.ModelError` unless ``value`` (the setting ``name``) is a whole
    number of threads from 1 to :data:`MAX_WORKERS` (a team's workers)."""
    check_number(name, value, 1, whole=True)
    if value > MAX_WORKERS:
        raise ModelError(f"at most {MAX_WORKERS} {name} (a team's workers), got {value}")


def make_sync(n_workers: int = 8) -> np.ndarray:
    """A zeroed synchronisation array for one team run of up to ``n_workers`` workers, its
    start aligned to a cache line (so that the per-writer lines really are separate)."""
    if not 1 <= int(n_workers) <= MAX_WORKERS:
        raise ValueError(f"a sync array serves 1..{MAX_WORKERS} workers, got {n_workers}")
    n = _ARRIVALS + LINE * int(n_workers)
    raw = np.zeros(n + LINE, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + n]


# ---- memory one worker writes ----------------------------------------------------------------------
def private_zeros(shape, dtype=np.float64) -> np.ndarray:
    """Zeros in cache lines of their own: the array starts on a 64-byte boundary and its last
    line is padded, so no other array shares a line with it. Scratch that one worker writes
    while another writes a neighbouring allocation would otherwise bounce a line between the
    cores at every write (false sharing: small ``np.zeros`` come from the same malloc bins).
    Its pages are mapped already (:func:`~kinedyn._memory.resident_zeros`): a run that writes
    it does not pay for that inside its timed steps."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    n_bytes = -(-max(size * dtype.itemsize, 1) // 64) * 64
    raw = resident_zeros(n_bytes + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip:skip + size * dtype.itemsize].view(dtype).reshape(shape)


def private_copy(x):
    """``x`` with every array (also inside tuples and NamedTuples) copied into
    :func:`private_zeros`; anything else is kept."""
    if isinstance(x, np.ndarray):
        out = private_zeros(x.shape, x.dtype)
        out[...] = x
        return out
    if isinstance(x, tuple):
        items = [private_copy(v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    return x


# ---- atomics --------------------------------------------------------------------------------------
def _pointer(context, builder, sig, args):
    aryty = sig.args[0]
    ary = make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])


@intrinsic
def atomic_add(typingctx, arr, i, v):
    """``arr[i] += v`` atomically (int64 array); returns the old value."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _pointer(context, builder, sig, args), args[2],
                                  "seq_cst")
    return types.int64(arr, i, types.int64), codegen


@intrinsic
def atomic_load(typingctx, arr, i):
    """``arr[i]`` with acquire ordering (int64 array)."""
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(context, builder, sig, args), "acquire", 8)
    return types.int64(arr, i), codegen


@intrinsic
def atomic_store(typingctx, arr, i, v):
    """``arr[i] = v`` with release ordering (int64 array)."""
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[2], _pointer(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()
    return types.void(arr, i, types.int64), codegen


@intrinsic
def cpu_relax(typingctx):
    """The spin-wait hint (x86 ``pause``; nothing elsewhere)."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


# ---- waiting ----------------------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def spin(spins):
    """One turn of a wait loop that has turned ``spins`` times: pause, or yield the core once
    the wait has lasted ``SPINS`` turns."""
    if spins > SPINS:
        sched_yield()
    else:
        cpu_relax()


@nb.njit(cache=True, nogil=True)
def barrier(sync, n, w):
    """Worker ``w`` waits until all ``n`` workers arrive; False (for every worker alike) if a
    worker asked to abort (``sync[ABORT] = 1``) before arriving.

    Worker ``w`` counts its barriers in its own line: arrival number ``e`` is published as
    ``2 e + a`` (``a`` the abort flag it saw on arriving) in slot ``e % 2`` of its line; it then
    waits for everybody's arrival ``e`` and aborts if any of them saw the flag. Every worker reads
    the same published values, so all decide alike, although a fast worker may already be
    setting the live flag in the *next* phase. Two slots by parity: a worker can be one barrier
    ahead of a slow reader, never two, so the value a reader needs is never overwritten.
    """
    own = _ARRIVALS + LINE * w
    e = max(atomic_load(sync, own), atomic_load(sync, own + 1)) // 2 + 1
    parity = e % 2
    abort = atomic_load(sync, ABORT)
    atomic_store(sync, own + parity, 2 * e + abort)
    for v in range(n):
        if v != w:
            slot = _ARRIVALS + LINE * v + parity
            spins = 0
            x = atomic_load(sync, slot)
            while x // 2 < e:
                spins += 1
                spin(spins)
                x = atomic_load(sync, slot)
            abort |= x % 2
    return abort == 0


@nb.njit(cache=True, nogil=True)
def wait_until(sync, slot, value):
    """Wait until the counter ``sync[slot]`` (only ever increased, by one producer with
    :func:`atomic_store`) reaches ``value``; everything the producer wrote before publishing
    that value is then visible."""
    spins = 0
    while atomic_load(sync, slot) < value:
        spins += 1
        spin(spins)


@nb.njit(cache=True, nogil=True)
def publish_failure(sync, w, step):
    """Worker ``w`` failed at ``step``: the others, running on without barriers, finish the
    steps before it and stop there (:func:`first_failure`)."""
    atomic_store(sync, _ARRIVALS + LINE * w + _FAILED, step + 1)


@nb.njit(cache=True, nogil=True)
def first_failure(sync, n):
    """The earliest step at which one of the ``n`` workers failed, ``NEVER`` if none has."""
    first = NEVER
    for v in range(n):
        x = atomic_load(sync, _ARRIVALS + LINE * v + _FAILED)
        if 0 < x <= first:
            first = x - 1
    return first


# ---- the team -------------------------------------------------------------------------------------
def _timed(fn, w: int) -> float:
    """Run ``fn(w)``; the calling thread's CPU seconds for it."""
    start = time.thread_time()
    fn(w)
    return time.thread_time() - start


def _serve(w: int, jobs: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
    """A pool thread: run ``fn(w)`` for every job until ``None`` arrives (holding no job
    while idle, so that what a job refers to can be collected); reports ``(w, CPU seconds)``
    or the exception."""
    while (fn := jobs.get()) is not None:
        try:
            done.put((w, _timed(fn, w)))
        except BaseException as exc:  # handed to the caller of Team.run
            done.put(exc)
        fn = None


def _stop(jobs) -> None:
    for q in jobs:
        q.put(None)


class Team:
    """``n_workers`` workers: the calling thread (worker 0) and ``n_workers - 1`` persistent
    daemon threads, one per worker (never shared: workers that meet at barriers must run at the
    same time). :meth:`run` calls ``fn(w)`` for every worker and returns when all are done,
    re-raising the first exception; runs are serialised by a lock."""

    def __init__(self, n_workers: int, name: str = "kinedyn-team"):
        if int(n_workers) < 1:
            raise ValueError(f"a team needs at least one worker, got {n_workers}")
        self.n = int(n_workers)
        self._jobs = [queue.SimpleQueue() for _ in range(self.n - 1)]
        self._done = queue.SimpleQueue()
        self._lock = threading.Lock()
        for w in range(1, self.n):  # the threads hold the queues, not the team
            threading.Thread(target=_serve, args=(w, self._jobs[w - 1], self._done),
                             name=f"{name}-{w}", daemon=True).start()
        # a team dropped without close() still lets its threads finish
        self._finalizer = weakref.finalize(self, _stop, list(self._jobs))

    def run(self, fn, one_by_one: bool = False) -> np.ndarray:
        """``fn(w)`` for every worker, at the same time; each worker's thread CPU seconds
        (waits included).

        ``one_by_one``: the calling thread runs the workers in order instead, each alone on
        the machine - a diagnostic for workers that never wait for each other (with a
        barrier, worker 0 would wait forever). A worker's CPU time alone against its time
        next to the others tells what running at the same time costs on this machine
        (cores that slow each other down, lines both write) apart from the work itself."""
        cpu = np.zeros(self.n)
        with self._lock:
            if self.n > 1 and not self._jobs:
                raise RuntimeError("the team is closed")
            if one_by_one:
                for w in range(self.n):
                    cpu[w] = _timed(fn, w)
                return cpu
            for jobs in self._jobs:
                jobs.put(fn)
            error = None
            try:
                cpu[0] = _timed(fn, 0)
            except BaseException as exc:
                error = exc
            for _ in self._jobs:
                got = self._done.get()
                if isinstance(got, BaseException):
                    error = error or got
                else:
                    cpu[got[0]] = got[1]
            if error is not None:
                raise error
        return cpu

    def close(self) -> None:
        """Let the pool threads finish."""
        with self._lock:
            self._finalizer()
            self._jobs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
