"""The GPU benchmark's carried wheels (benchmarks/gpu/carried.txt) cover what pragmodels needs on
the device machine, whose image has its own CUDA jax and no registry: every runtime dependency in
pyproject.toml, and the requirements of everything carried, is carried or on the image. A new
dependency (lazy_loader, pydantic) once reached the package without reaching this list, and the
device script would have stopped at `import pragmodels`."""

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CARRIED = ROOT / "benchmarks" / "gpu" / "carried.txt"
DEVICE_PYTHON = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
                 "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
                 "platform_python_implementation": "CPython", "os_name": "posix"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lists() -> tuple[set[str], set[str]]:
    text = CARRIED.read_text()
    on_image = re.search(r"^# ON_IMAGE.*\n#\s+(.+)$", text, re.MULTILINE)
    assert on_image, "carried.txt lost its ON_IMAGE line"
    carried = {_norm(line.split("#")[0].strip()) for line in text.splitlines() if line.split("#")[0].strip()}
    return carried, {_norm(n) for n in on_image.group(1).split()}


def _applies(req: Requirement, extra: str = "") -> bool:
    return req.marker is None or req.marker.evaluate(DEVICE_PYTHON | {"extra": extra})


def test_every_runtime_dependency_is_carried_or_on_the_image():
    carried, on_image = _lists()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    missing = sorted(_norm(Requirement(d).name) for d in deps
                     if _norm(Requirement(d).name) not in carried | on_image)
    assert not missing, f"pyproject.toml dependencies neither in carried.txt nor on the image: {missing}"
    assert not carried & on_image, carried & on_image


def test_what_is_carried_brings_its_own_requirements():
    carried, on_image = _lists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras_only = {_norm(Requirement(d).name) for group in project["optional-dependencies"].values() for d in group}
    installed = {}
    for name in carried:
        try:
            installed[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pass
    # a carried package absent from the project venv can only be an extra's (gguf: the hf extra)
    assert carried - set(installed) <= extras_only, carried - set(installed)
    missing = []
    todo = [(name, "") for name in installed]
    seen = set()
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen or name not in installed:
            continue
        seen.add((name, extra))
        for spec in installed[name].requires or []:
            req = Requirement(spec)
            if not _applies(req, extra):
                continue
            dep = _norm(req.name)
            if dep not in carried | on_image:
                missing.append(f"{name}{f'[{extra}]' if extra else ''} needs {dep}")
            todo += [(dep, "")] + [(dep, e) for e in req.extras]
    assert not missing, missing
