import pytest


@pytest.fixture(autouse=True, scope="session")
def _basis_cache(tmp_path_factory):
    """Groebner bases cached in a per-session directory (computed for real once per run)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KINEDYN_CACHE", str(tmp_path_factory.mktemp("kinedyn-cache")))
    yield
    mp.undo()
