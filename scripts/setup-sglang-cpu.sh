#!/usr/bin/env bash
# A real SGLang server on the CPU, in its own virtual environment (.engines/sglang), for the tests.
#
# SGLang ships no CPU build: its wheel pins a CUDA torch, and its kernel package is CUDA-only.
# This route runs its plain-torch code paths on a CPU torch instead:
#   1. torch 2.13.0+cpu (the machine's own wheel) and sglang's other dependencies, pinned to fit
#      it (scripts/sglang_cpu/requirements.txt);
#   2. sglang and torchvision with --no-deps, so that neither pulls a CUDA torch back in;
#   3. torchvision's fake-op registration skipped when its compiled (CUDA) ops cannot load
#      (scripts/sglang_cpu/torchvision-fake-ops.patch), as torchvision already does for its other ops;
#   4. a stand-in sgl_kernel (scripts/sglang_cpu/sgl_kernel), which SGLang imports on the CPU
#      but never calls on the route the tests launch it with.
# Delete this script and its folder the day SGLang publishes a CPU wheel.
#
# Idempotent: a second run with the same inputs returns at once.
set -euo pipefail

SGLANG_VERSION=0.5.23
TORCHVISION_VERSION=0.28.0  # the release built against torch 2.13
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SUPPORT="$ROOT/scripts/sglang_cpu"
VENV="$ROOT/.engines/sglang"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.setup-stamp"

inputs_digest() {
    cat "$0" "$SUPPORT"/requirements.txt "$SUPPORT"/torchvision-fake-ops.patch "$SUPPORT"/sgl_kernel/__init__.py | sha256sum | cut -d' ' -f1
}

digest="$(inputs_digest)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$digest" ]]; then
    exit 0
fi

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "setup-sglang-cpu: needs Python 3.11 (the CPU torch wheel is built for it); set PYTHON=python3.11" >&2
    exit 1
fi

started=$SECONDS
echo "setup-sglang-cpu: installing SGLang $SGLANG_VERSION on a CPU torch into .engines/sglang"
rm -f "$STAMP"
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
# pip -q still warns about each empty local index this machine's pip set-up names; those lines say nothing.
pip_install() {
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" 2> >(grep -v "is ignored: it is neither" >&2)
}
pip_install -r "$SUPPORT/requirements.txt"
pip_install --no-deps "sglang==$SGLANG_VERSION" "torchvision==$TORCHVISION_VERSION"

site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if ! patch -s -d "$site" -p1 -R --dry-run <"$SUPPORT/torchvision-fake-ops.patch" >/dev/null 2>&1; then
    patch -s -d "$site" -p1 --forward <"$SUPPORT/torchvision-fake-ops.patch"
fi
mkdir -p "$site/sgl_kernel"
cp "$SUPPORT/sgl_kernel/__init__.py" "$site/sgl_kernel/__init__.py"

# What the server's processes import (argument resolution, HTTP server, scheduler, detokenizer):
# a missing dependency fails here, not at the first launch.
SGLANG_USE_CPU_ENGINE=1 "$VENV/bin/python" -W ignore -c "import sglang.srt.arg_groups.pipeline, \
sglang.srt.entrypoints.http_server, sglang.srt.managers.scheduler, sglang.srt.managers.detokenizer_manager"
echo "$digest" >"$STAMP"
echo "setup-sglang-cpu: ready in $((SECONDS - started)) s, $(du -sh "$VENV" | cut -f1) in .engines/sglang"
