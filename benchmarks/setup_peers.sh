#!/usr/bin/env bash
# Build the benchmark-only environment of peer libraries, away from neardup's own environment:
#   benchmarks/.peers/venv            datasketch, rensa, simhash (1e0ng), xxhash, neardup (-e)
#   benchmarks/.peers/simhash_pybind  simhash-pybind (its top-level package is also named `simhash`)
# Usage: bash benchmarks/setup_peers.sh            (PYTHON=python3.11 to pick the interpreter)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
peers="$here/.peers"
python="${PYTHON:-python3}"

mkdir -p "$peers"
if [ ! -x "$peers/venv/bin/python" ]; then
    "$python" -m venv "$peers/venv"
fi
"$peers/venv/bin/python" -m pip install --quiet --upgrade pip
"$peers/venv/bin/python" -m pip install --quiet -r "$here/requirements-peers.txt"
"$peers/venv/bin/python" -m pip install --quiet -e "$repo"

# --target keeps simhash-pybind's `simhash` package out of the venv's site-packages; the benchmark
# puts this folder first on sys.path in its own subprocess.
"$peers/venv/bin/python" -m pip install --quiet --upgrade --target "$peers/simhash_pybind" simhash-pybind

"$peers/venv/bin/python" - "$peers/simhash_pybind" <<'PY'
import importlib.metadata as md
import sys

for name in ("datasketch", "rensa", "simhash", "xxhash", "neardup"):
    print(f"{name:16s} {md.version(name)}")
sys.path.insert(0, sys.argv[1])
print(f"{'simhash-pybind':16s} {md.version('simhash-pybind')}")
PY
echo "peers ready in $peers"
