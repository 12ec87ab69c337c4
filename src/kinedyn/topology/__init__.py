"""Topology: the body-joint graph, spanning tree and loops, mobility, structural decomposition."""
from .graph import JOINT_CONSTRAINTS, Loop, Mobility, Topology
from .structure import Block, BlockTriangularForm, block_triangular

__all__ = ["Topology", "Loop", "Mobility", "JOINT_CONSTRAINTS", "Block", "BlockTriangularForm",
           "block_triangular"]
