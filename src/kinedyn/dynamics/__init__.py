"""Forward and inverse dynamics: methods, integrators, reactions."""
