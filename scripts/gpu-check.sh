#!/usr/bin/env bash
# Run hetdb's GPU tests on a machine with an NVIDIA GPU, from the repository root.
# Installs wheels carried in .whl/ (if any) into .site/, then runs every test marked `gpu`;
# arguments replace the default target (tests/); with $OUT set, the pytest log is also written to $OUT/gpu-tests.log.
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target .site .whl/*.whl || exit 1
fi
export PYTHONPATH="$PWD/.site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PWD/.site/bin:$PATH"
export NCCL_NVLS_ENABLE=0
export PYTHONUNBUFFERED=1
nvidia-smi || echo "nvidia-smi failed"
log=/dev/null
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && log="$OUT/gpu-tests.log"; fi
python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider "${@:-tests}" 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
