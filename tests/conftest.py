import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
# importing pragmodels changes no global state: the tests ask, as a user would, for one CPU device
# per core (parallel chains; before JAX starts) and for the persistent compilation cache
from pragmodels.runtime import configure_host_devices, enable_compilation_cache  # noqa: E402

configure_host_devices()
enable_compilation_cache(os.environ.get("PRAGMODELS_COMPILATION_CACHE", str(ROOT / ".pytest_cache" / "jax")))


@pytest.fixture(scope="session")
def mirror() -> Path:
    from pragmodels.datasets import data_dir

    path = data_dir()  # a relative value resolves against the repository root, as the library does
    assert path is not None
    if not path.is_dir():
        pytest.fail(f"offline mirror not found at {path}; set PRAGMODELS_DATA_DIR")
    return path
