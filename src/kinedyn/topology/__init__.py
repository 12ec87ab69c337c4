"""Topology: the body-joint graph, spanning tree and loops, mobility, structural decomposition."""
from .assembly import AssemblyTree, SerialChain, balanced_tree, serial_chain
from .graph import JOINT_CONSTRAINTS, Loop, Mobility, Topology
from .structure import Block, BlockTriangularForm, block_triangular

__all__ = ["Topology", "Loop", "Mobility", "JOINT_CONSTRAINTS", "Block", "BlockTriangularForm",
           "block_triangular"]
__all__ += ["AssemblyTree", "SerialChain", "balanced_tree", "serial_chain"]
