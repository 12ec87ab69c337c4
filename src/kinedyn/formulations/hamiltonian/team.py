"""Threaded HDCA evaluation: the assembly tree split by subtrees over a persistent thread team.

The paper's parallel HDCA (section 2, Fig. 3; O(log n) with one processor per node) evaluates
the nodes of one tree level at the same time. With a few cores, one fork/join per level costs
more than the few microseconds of work in a level (measured: 2 threads 0.48x at N = 256 with a
Numba ``prange`` per level). Here each worker of a :class:`kinedyn.parallel.team.Team` owns one
whole subtree below the top ``ceil(log2 n_workers)`` levels and runs it without synchronisation:

1. worker 0 runs the forward kinematics (a serial prefix along the chain, about 13 % of an
   evaluation) and publishes its progress on an atomic counter; worker 1 follows it, computing
   the leaves (eqs. 13-18, 38) of every body as soon as the chain is known that far, and
   publishes its own progress;
2. each worker, once the leaves of its range are done: assembly (27-37, 39) of its subtree;
   barrier;
3. worker 0: assembly of the top nodes, base connection (40-44), disassembly of the top nodes
   (45-48); barrier;
4. each worker: disassembly of its subtree, leaf velocities (11-12), rates (49-51) of the
   joints inside its range; barrier; worker 0: the joints between ranges.

Three barriers per evaluation whatever the depth. Every node is computed by exactly the same
compiled code as the serial evaluation (:func:`.kernels.evaluate`), only the order of
independent nodes differs, so the results are bit-for-bit identical (tested).
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from ...parallel.team import ABORT, PROGRESS, PROGRESS_2, atomic_store, barrier, wait_until
from .kernels import (HDCAData, assemblies, base_connection, disassemblies, forward_kinematics,
                      joint_rates, leaf, leaves, velocities)


class TeamPlan(NamedTuple):
    """Who does what. Worker ``w`` owns chain bodies ``body_lo[w]:body_hi[w]`` (a subtree),
    its internal nodes ``nodes[node_ptr[w]:node_ptr[w+1]]`` (children before parents) and the
    joints ``joints[joint_ptr[w]:joint_ptr[w+1]]`` whose two sides it owns; ``top`` are the
    nodes above the subtrees and ``boundary`` the joints between ranges (both worker 0's);
    worker 0 gets the rightmost subtree (it runs the forward kinematics, which reaches that
    end last)."""
    n_workers: int
    body_lo: np.ndarray    # (n_workers,)
    body_hi: np.ndarray    # (n_workers,)
    node_ptr: np.ndarray   # (n_workers + 1,)
    nodes: np.ndarray      # (n_node_owned,)
    top: np.ndarray        # (n_top,)
    joint_ptr: np.ndarray  # (n_workers + 1,)
    joints: np.ndarray     # (n_joint_owned,)
    boundary: np.ndarray   # (n_boundary,)


def make_plan(data: HDCAData, n_workers: int) -> TeamPlan:
    """Split the assembly tree of ``data`` into ``n_workers`` subtrees (fewer for tiny chains:
    the remaining workers only meet at the barriers)."""
    n_workers = int(n_workers)
    if n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    left, right, first, last = data.left, data.right, data.first, data.last
    n_b, n_j = data.n_b, data.n_j
    parts = [len(left) - 1]  # the root
    while len(parts) < n_workers:  # split the largest splittable subtree
        inner = [i for i, c in enumerate(parts) if left[c] >= 0]
        if not inner:
            break
        i = max(inner, key=lambda i: last[parts[i]] - first[parts[i]])
        c = parts[i]
        parts[i:i + 1] = [int(left[c]), int(right[c])]
    owner = {}  # part (in chain order) -> worker; worker 0 gets the rightmost
    for i, c in enumerate(reversed(parts)):
        owner[c] = i
    internal = [c for c in np.argsort(data.height, kind="stable") if left[c] >= 0]
    lo = np.zeros(n_workers, np.int64)
    hi = np.zeros(n_workers, np.int64)
    node_lists = [[] for _ in range(n_workers)]
    joint_lists = [[] for _ in range(n_workers)]
    top, boundary = [], []
    for c, w in owner.items():
        lo[w], hi[w] = first[c], last[c] + 1
        node_lists[w] = [int(x) for x in internal if first[c] <= first[x] and last[x] <= last[c]]
        joint_lists[w] = [k for k in range(lo[w], hi[w] + 1)
                          if (k > lo[w] or k == 0) and (k < hi[w] or (k == n_b and n_j > n_b))]
        if lo[w] > 0:
            boundary.append(int(lo[w]))
    owned = {x for lst in node_lists for x in lst}
    top = [int(c) for c in internal if c not in owned]
    ptr = lambda lists: np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)  # noqa: E731
    flat = lambda lists: np.array([x for lst in lists for x in lst], np.int64)  # noqa: E731
    return TeamPlan(n_workers, lo, hi, ptr(node_lists), flat(node_lists),
                    np.array(top, np.int64), ptr(joint_lists), flat(joint_lists),
                    np.array(sorted(boundary), np.int64))


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate_part(data, work, plan, w, sync, gen, q, p, qd, pd) -> int:
    """Worker ``w``'s share of evaluation number ``gen`` of a run (steps 1-4 of the module
    docstring, up to the rates of its own joints); 1 (for every worker alike) when a joint's
    constraint matrix is singular. Follow with :func:`boundary_rates`."""
    n_w = plan.n_workers
    lo, hi = plan.body_lo[w], plan.body_hi[w]
    a, b = plan.node_ptr[w], plan.node_ptr[w + 1]
    fk_base, leaf_base = gen * (data.n_j + 2), gen * (data.n_b + 1)
    if n_w == 1:
        forward_kinematics(data, work, q, None, 0)
        leaves(data, work, p, 0, data.n_b)
    elif w == 1:  # every leaf, right behind the forward kinematics
        for k in range(data.n_b):
            wait_until(sync, PROGRESS, fk_base + (k + 2 if k + 1 < data.n_b else data.n_j + 1))
            leaf(data, work, k, p)
            atomic_store(sync, PROGRESS_2, leaf_base + k + 1)
    else:
        if w == 0:
            forward_kinematics(data, work, q, sync, fk_base)
        if hi > lo:
            wait_until(sync, PROGRESS_2, leaf_base + hi)
    st = assemblies(data, work, plan.nodes, a, b)
    if st != 0:
        atomic_store(sync, ABORT, 1)
    if n_w > 1 and not barrier(sync, n_w):
        return 1
    if w == 0 and st == 0:
        top = plan.top
        st = assemblies(data, work, top, 0, top.shape[0])
        if st == 0:
            st = base_connection(data, work)
        if st == 0:
            disassemblies(data, work, top, 0, top.shape[0])
        else:
            atomic_store(sync, ABORT, 1)
    if n_w > 1:
        if not barrier(sync, n_w):
            return 1
    elif st != 0:
        return 1
    disassemblies(data, work, plan.nodes, a, b)
    velocities(work, lo, hi)
    for i in range(plan.joint_ptr[w], plan.joint_ptr[w + 1]):
        joint_rates(data, work, plan.joints[i], qd, pd)
    return 0


@nb.njit(cache=True, nogil=True, inline="always")
def boundary_rates(data, work, plan, w, sync, qd, pd):
    """After every worker's :func:`evaluate_part`: worker 0 computes the rates of the joints
    between the workers' ranges (the other workers return at once)."""
    if plan.n_workers > 1:
        barrier(sync, plan.n_workers)
    if w == 0:
        for k in plan.boundary:
            joint_rates(data, work, k, qd, pd)
