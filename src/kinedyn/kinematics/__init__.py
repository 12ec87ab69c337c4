"""Position, velocity and acceleration analysis."""
