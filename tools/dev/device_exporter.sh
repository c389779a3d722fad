#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, carrying .gl and the binaries
# in $KVSCOPE_BIN (default .devbin): the capture exporter's tests (tiny random models of
# each family, PyTorch + transformers), with the engine reading every file back.
set -u
. "$(dirname "$0")/device_env.sh"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
KVSCOPE_BIN=$B python3 -m pytest -q -p no:cacheprovider tools/export "$@"
