"""Linear solvers with an analyse-once / factorise-per-step / solve life-cycle."""
