#!/usr/bin/env bash
# Download, HERE (a machine with a package registry), the wheels that benchmarks/gpu/run.sh
# installs offline on the device machine (no internet there) into benchmarks/gpu/wheels/
# (git-ignored; carried with the device tool's `carry`, 64 MiB at most).
#
#   bash benchmarks/gpu/fetch_wheels.sh     # pip of $PY (default: .venv/bin/python, else python3)
#
# What: the names in benchmarks/gpu/carried.txt (pragmodels' runtime dependencies that the
# device image lacks, and theirs), at the versions pyproject.toml pins with `==` or else the ones
# installed in $PY's environment (the project venv). The image has jax 0.11.2 (CUDA), numpyro 0.21,
# numpy, scipy, pandas and h5py; the project's own jax 0.12 CUDA wheels are far over 64 MiB, so
# the device keeps its jax. All wheels are pure Python but pydantic-core's, fetched for the
# device's CPython ($PYVER) on manylinux x86_64 (about 2 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${PY:-}" ]; then [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; fi
DEST=benchmarks/gpu/wheels
# the device's python3 was 3.12.3 when last read (KINDS.md); pure wheels fit any 3.x that their
# Requires-Python allows, so this only filters the metadata check
PYVER=${PYVER:-3.12}
mapfile -t PKGS < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' benchmarks/gpu/carried.txt | grep -v '^$')
COMPILED=(pydantic-core)

PINFILE=$(mktemp)
trap 'rm -f "$PINFILE"' EXIT
# a file, not a process substitution: a name that cannot be resolved stops the script
"$PY" - "${PKGS[@]}" >"$PINFILE" <<'PYEOF'
import re, sys, tomllib
from importlib import metadata
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = project["dependencies"] + [d for group in project.get("optional-dependencies", {}).values() for d in group]
pins = {re.split(r"[\[=<>!~ ;]", d, 1)[0].lower().replace("_", "-"): re.sub(r"\[.*?\]", "", d) for d in deps}
for name in sys.argv[1:]:
    pin = pins.get(name.lower().replace("_", "-"))
    if pin is not None and "==" in pin:
        print(pin)
        continue
    try:  # the version the project venv runs
        print(f"{name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        if pin is None:
            sys.exit(f"fetch_wheels: {name} is neither in pyproject.toml nor installed in {sys.executable}")
        print(pin)  # not installed here (an extra's package): the newest version its pin allows
PYEOF
mapfile -t PINS <"$PINFILE"
PURE=() NATIVE=()
for pin in "${PINS[@]}"; do
    name=${pin%%==*}
    if [[ " ${COMPILED[*]} " == *" $name "* ]]; then NATIVE+=("$pin"); else PURE+=("$pin"); fi
done
rm -rf "$DEST" && mkdir -p "$DEST"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DEST" \
    --python-version "$PYVER" --implementation py --abi none --platform any \
    "${PURE[@]}"
for w in "$DEST"/*.whl; do
    case "$(basename "$w")" in *-py3-none-any.whl|*-py2.py3-none-any.whl) ;;
        *) echo "fetch_wheels: $(basename "$w") is not a pure-Python wheel" >&2; exit 1;; esac
done
if [ "${#NATIVE[@]}" -gt 0 ]; then
    "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DEST" \
        --python-version "$PYVER" --implementation cp --abi "cp${PYVER/./}" \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 "${NATIVE[@]}"
fi
ls -l "$DEST"
du -sh "$DEST"
