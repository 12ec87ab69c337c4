"""Plots and pictures (Matplotlib, Agg back end): never imported by the numerical core."""
