"""Benchmarks (``kinedyn bench NAME``): each module exposes ``run(quick, out_dir) -> Report``."""
