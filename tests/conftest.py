import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
# reuse compiled NUTS kernels across tests and runs (must be set before pragmodels is imported)
os.environ.setdefault("PRAGMODELS_COMPILATION_CACHE", str(ROOT / ".pytest_cache" / "jax"))


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = Path(os.environ["PRAGMODELS_DATA_DIR"]).resolve()
    if not path.is_dir():
        pytest.fail(f"offline mirror not found at {path}; set PRAGMODELS_DATA_DIR")
    return path
