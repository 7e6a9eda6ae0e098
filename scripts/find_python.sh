#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter, or explain what is needed and exit 1.
# Order: $PRAGMODELS_PYTHON, python3.13, python3.12, python3, then pyenv's installed versions.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
candidates=()
[ -n "${PRAGMODELS_PYTHON:-}" ] && candidates+=("$PRAGMODELS_PYTHON")
for name in python3.14 python3.13 python3.12 python3; do
  p=$(command -v "$name" 2>/dev/null) && candidates+=("$p")
done
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for d in $(ls -d "$root"/versions/3.1[2-9]* 2>/dev/null | sort -V); do
  [ -x "$d/bin/python3" ] && candidates+=("$d/bin/python3")
done
for c in "${candidates[@]}"; do
  if ok "$c"; then echo "$c"; exit 0; fi
done
echo "pragmodels needs Python >= 3.12 (jax 0.12 and arviz 1.x require it)." >&2
echo "Tried: ${candidates[*]:-nothing on PATH}." >&2
echo "Install one (e.g. 'pyenv install 3.12') or set PRAGMODELS_PYTHON=/path/to/python3.12." >&2
exit 1
