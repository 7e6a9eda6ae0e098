#!/usr/bin/env bash
# Stage HERE what benchmarks/gpu/hf_listener.py needs on the device machine, which reaches
# nothing outside and takes at most 64 MiB a call (the working tree, ~10 MiB, included):
#
#   bash benchmarks/gpu/stage_hf.sh [MODEL.gguf]    # default: the bundled SmolLM2-135M-Instruct (94 MiB)
#
# - benchmarks/gpu/data/wavelength/: the Wavelength file, from $PRAGMODELS_DATA_DIR (default
#   ../shared/data); the script reads it there when the device has no PRAGMODELS_DATA_DIR.
# - benchmarks/gpu/model/<file>.part-NN (PART_MIB each, default 47: two parts for SmolLM2) and <file>.sha256: the model
#   file in parts, one part per device call (the calls must follow each other on one warm machine,
#   which keeps the parts an earlier call carried; hf_listener.py joins them and checks the sha256).
# All git-ignored. The wheels (gguf, which transformers reads GGUF files with, and what
# `import pragmodels` lacks there) come from benchmarks/gpu/fetch_wheels.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${PY:-}" ]; then [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; fi
DATA=${PRAGMODELS_DATA_DIR:-../shared/data}
PART_MIB=${PART_MIB:-47}
MODEL=${1:-$("$PY" -c 'from pragmodels.lm import smollm2_path; print(smollm2_path())')}

[ -d "$DATA/wavelength" ] || { echo "stage_hf: no $DATA/wavelength (set PRAGMODELS_DATA_DIR)" >&2; exit 2; }
rm -rf benchmarks/gpu/data && mkdir -p benchmarks/gpu/data
cp -r "$DATA/wavelength" benchmarks/gpu/data/

name=$(basename "$MODEL")
rm -rf benchmarks/gpu/model && mkdir -p benchmarks/gpu/model
split -b "${PART_MIB}M" -d -a 2 "$MODEL" "benchmarks/gpu/model/$name.part-"
(cd "$(dirname "$MODEL")" && sha256sum "$name") > "benchmarks/gpu/model/$name.sha256"
ls -l benchmarks/gpu/model benchmarks/gpu/data/wavelength
echo "stage_hf: carry benchmarks/gpu/model/$name.part-00 in the first call, then each next part, and in the"
echo "last call also benchmarks/gpu/model/$name.sha256, benchmarks/gpu/data and benchmarks/gpu/wheels"
