#!/usr/bin/env bash
# The environment made from nothing, as .ci/run makes it, in a fresh clone of this checkout's HEAD: `environment.sh uv` (uv
# from its own virtualenv, its cache empty) or `environment.sh pip` (the Makefile without uv). Everything goes at the end.
set -euo pipefail
mode=$1; repo=$(cd "$(dirname "$0")/.." && pwd); work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone" && cd "$work/clone"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
if [ "$mode" = uv ]; then
  python3 -m venv build/uv && build/uv/bin/python -m pip install -q uv
  UV_CACHE_DIR="$work/uv-cache" make -s env UV=build/uv/bin/uv
else
  make -s env UV=
fi
.venv/bin/python -c "import torch, neuron_support; print(torch.__version__)"
