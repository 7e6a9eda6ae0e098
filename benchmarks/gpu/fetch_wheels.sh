#!/usr/bin/env bash
# Download, HERE (a machine with a package registry), the wheels that benchmarks/gpu/run.sh
# installs offline on the device machine (no internet there) into benchmarks/gpu/wheels/
# (git-ignored; carried with the device tool's `carry`, 64 MiB at most).
#
#   bash benchmarks/gpu/fetch_wheels.sh     # pip of $PY (default: .venv/bin/python, else python3)
#
# What and why: `import pragmodels` needs numpy, scipy, pandas, xarray, jax and numpyro at module
# level, and arviz-base / arviz-stats / h5netcdf lazily (pm.fit, diagnostics, netCDF). The H200
# image has jax 0.11.2 (CUDA), numpyro 0.21, numpy, scipy, pandas, h5py, tqdm, tabulate and an
# xarray of unknown version, but no arviz 1.x and no h5netcdf. The project's own jax 0.12 CUDA
# wheels are far over 64 MiB, so the device keeps its jax; we carry only the pure-Python
# packages below, at the versions pyproject.toml pins (read from it, so they stay in sync) or,
# for a dependency it does not pin (xarray-einstats, which arviz-stats needs for loo/ess), the
# version installed in $PY's environment (the project venv).
# All are py3-none-any; no compiled wheel is needed (pandas and h5py are on the image: a
# compiled pandas for cp310-cp313 would be ~4 x 12 MiB, too close to the limit to carry
# "just in case").
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${PY:-}" ]; then [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; fi
DEST=benchmarks/gpu/wheels
# the device's python3 was 3.12.3 when last read (KINDS.md); pure wheels fit any 3.x that their
# Requires-Python allows, so this only filters the metadata check
PYVER=${PYVER:-3.12}
# gguf: transformers reads GGUF files with it (hf_listener.py); the image has transformers but not gguf
PKGS=(xarray xarray-einstats arviz-base arviz-stats h5netcdf tqdm tabulate gguf)

mapfile -t PINS < <("$PY" - "${PKGS[@]}" <<'PYEOF'
import re, sys, tomllib
from importlib import metadata
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
pins = {re.split(r"[\[=<>!~ ]", d, 1)[0].lower(): d for d in deps}
for name in sys.argv[1:]:
    pin = pins.get(name.lower())
    if pin is not None and "==" in pin:
        print(re.sub(r"\[.*?\]", "", pin))
        continue
    try:
        print(f"{name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        sys.exit(f"fetch_wheels: {name} has no '==' pin in pyproject.toml and is not installed in {sys.executable}")
PYEOF
)
rm -rf "$DEST" && mkdir -p "$DEST"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DEST" \
    --python-version "$PYVER" --implementation py --abi none --platform any \
    "${PINS[@]}"
for w in "$DEST"/*.whl; do
    case "$(basename "$w")" in *-py3-none-any.whl|*-py2.py3-none-any.whl) ;;
        *) echo "fetch_wheels: $(basename "$w") is not a pure-Python wheel" >&2; exit 1;; esac
done
ls -l "$DEST"
du -sh "$DEST"
