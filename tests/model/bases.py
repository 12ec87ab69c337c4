"""Small valid model-file data (plain dicts) that tests mutate."""


def spatial() -> dict:
    """A valid spatial model: revolute, spherical, universal, rod; a driver and a spring."""
    return {
        "name": "arm", "dim": 3, "gravity": [0, 0, "-g"],
        "parameters": {"g": 9.81, "L": 0.5},
        "ground": {"points": {"O": [0, 0, 0], "Q": [1, 0, 0]}, "vectors": {"z": [0, 0, 1]}},
        "bodies": [
            {"name": "a", "mass": 1.0, "inertia": [0.1, 0.1, 0.01], "com": ["L/2", 0, 0],
             "points": {"O": [0, 0, 0], "E": ["L", 0, 0]}, "vectors": {"z": [0, 0, 1]}},
            {"name": "b", "mass": 1.0, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.01]],
             "position": ["L", 0, 0], "points": {"E": [0, 0, 0], "F": ["L", 0, 0]},
             "vectors": {"x": [1, 0, 0]}},
            {"name": "c", "mass": 0.5, "inertia": [0.01, 0.01, 0.01, 0, 0, 0],
             "position": [1, 0, 0], "points": {"F": [0, 0, 0], "G": [0, 0, 0.2]},
             "vectors": {"y": [0, 1, 0]}},
        ],
        "joints": [
            {"name": "hinge", "type": "revolute", "body_a": "ground", "body_b": "a",
             "point_a": "O", "point_b": "O", "axis_a": "z", "axis_b": "z"},
            {"name": "ball", "type": "spherical", "body_a": "a", "body_b": "b",
             "point_a": "E", "point_b": "E"},
            {"name": "cardan", "type": "universal", "body_a": "b", "body_b": "c",
             "point_a": "F", "point_b": "F", "axis_a": "x", "axis_b": "y"},
            {"name": "tie", "type": "rod", "body_a": "ground", "body_b": "c",
             "point_a": "Q", "point_b": "G"},
        ],
        "drivers": [{"name": "motor", "kind": "joint", "joint": "hinge",
                     "function": "0.1*sin(t)"}],
        "forces": [{"name": "spring", "kind": "spring", "body_a": "ground", "point_a": "Q",
                    "body_b": "b", "point_b": "F", "stiffness": 100}],
    }


def planar() -> dict:
    return {
        "name": "pendulum", "dim": 2, "gravity": [0, -9.81],
        "ground": {"points": {"O": [0, 0]}},
        "bodies": [{"name": "rod", "mass": 1.0, "inertia": 0.1, "com": [0.5, 0],
                    "points": {"A": [0, 0]}, "vectors": {"x": [1, 0]}}],
        "joints": [{"name": "pin", "type": "revolute", "body_a": "ground", "body_b": "rod",
                    "point_a": "O", "point_b": "A"}],
    }
