#!/usr/bin/env bash
# The prepared GPU benchmark: install the carried wheels offline, install pragmodels without its
# pins, print the environment, run benchmarks/gpu/hierarchical.py (arguments passed through), or,
# with BENCH=hf_listener, benchmarks/gpu/hf_listener.py (the Wavelength listener pass through
# transformers; from the checkout, as a module, since it imports models/; see stage_hf.sh).
#
# On the device machine (from the repository root; the device tool's `carry` must name
# benchmarks/gpu/wheels, made here by benchmarks/gpu/fetch_wheels.sh):
#
#   bash benchmarks/gpu/run.sh                 # sizes 100 1000 10000 on a GPU
#   bash benchmarks/gpu/run.sh --quick --sizes 100
#
# PY: the Python to use (default python3: on the H200 image the one with jax 0.11.2 + CUDA and
# numpyro 0.21). Nothing is installed into that environment: the carried wheels that it lacks
# (or has older than pyproject.toml pins) and pragmodels itself (--no-deps, so its jax pins
# never replace the machine's jax) go to $SITE, put first on PYTHONPATH. Results: $OUT (when
# set: the device tool fetches it) and benchmarks/results/gpu.md (+ gpu.csv), section chosen by
# the backend that ran (see hierarchical.py --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
SITE=${SITE:-/tmp/pragmodels-gpu-site}
WHEELS=benchmarks/gpu/wheels
export PYTHONUNBUFFERED=1
[ -n "${OUT:-}" ] && mkdir -p "$OUT"

echo "== python: $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "run.sh: no wheels in $WHEELS (run benchmarks/gpu/fetch_wheels.sh here and carry that folder)" >&2
    exit 2
fi
rm -rf "$SITE" && mkdir -p "$SITE"

# carried wheels the environment lacks, or has older than the carried (pinned) version
mapfile -t NEED < <("$PY" - "$WHEELS"/*.whl <<'PYEOF'
import os, re, sys
from importlib import metadata
def key(v):  # numeric release tuple; enough for these pins (packaging may be missing)
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:4])
for path in sys.argv[1:]:
    name, version = os.path.basename(path).split("-")[:2]
    try:
        have = metadata.version(name.replace("_", "-"))
    except metadata.PackageNotFoundError:
        have = None
    if have is None or key(have) < key(version):
        print(path)
        print(f"   {name}: have {have}, installing {version}", file=sys.stderr)
    else:
        print(f"   {name}: have {have} (carried {version}, not needed)", file=sys.stderr)
PYEOF
)
if [ "${#NEED[@]}" -gt 0 ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check \
        --find-links "$WHEELS" --target "$SITE" "${NEED[@]}"
fi
# pragmodels itself, without its dependencies (its pins name jax 0.12 / numpyro 0.22)
if "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir \
        --disable-pip-version-check --ignore-requires-python --target "$SITE" . >/tmp/pragmodels-pip.log 2>&1; then
    echo "== pragmodels installed into $SITE (--no-deps)"
else
    echo "== pip could not build pragmodels here (no setuptools?): using the checkout on PYTHONPATH"
    tail -3 /tmp/pragmodels-pip.log || true
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

# from / so that the checkout does not shadow the installed copy
(cd / && "$PY" - <<'PYEOF'
import sys
from importlib import metadata
import jax
names = ["jax", "jaxlib", "numpyro", "numpy", "scipy", "pandas", "xarray", "arviz-base", "arviz-stats",
         "h5netcdf", "tqdm", "lazy_loader", "pydantic", "pragmodels"]
plugins = [d.metadata["Name"] for d in metadata.distributions() if "jax-cuda" in (d.metadata["Name"] or "")]
for n in names + sorted(set(plugins)):
    try:
        print(f"   {n} {metadata.version(n)}")
    except metadata.PackageNotFoundError:
        print(f"   {n} (not installed)")
print("== jax.devices():", jax.devices(), "backend", jax.default_backend())
import pragmodels
print("== import pragmodels OK:", pragmodels.__file__)
try:  # what pm.fit / pm.loo / netCDF need lazily (not the benchmark itself)
    import h5netcdf, arviz_base  # noqa: F401
    from arviz_stats import ess, loo  # noqa: F401
    print("== arviz-base, arviz-stats (ess, loo), h5netcdf import OK")
except ImportError as e:
    print("== WARNING: pm.fit would fail here:", repr(e))
PYEOF
)
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

case "${BENCH:-hierarchical}" in
    hierarchical) CMD=("$PY" benchmarks/gpu/hierarchical.py) ;;
    hf_listener) CMD=("$PY" -m benchmarks.gpu.hf_listener) ;;
    *) echo "run.sh: BENCH=$BENCH: expected hierarchical or hf_listener" >&2; exit 2 ;;
esac
set -o pipefail
if [ -n "${OUT:-}" ]; then
    "${CMD[@]}" --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
else
    "${CMD[@]}" "$@"
fi
