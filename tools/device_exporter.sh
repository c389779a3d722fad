#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, carrying .gl and the binaries
# in $KVSCOPE_BIN (default .devbin): the capture exporter's tests (tiny random models of
# each family, PyTorch + transformers), with the engine reading every file back.
set -u
B=${KVSCOPE_BIN:-./.devbin}
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
$B/kvscope devices 2>/dev/null | grep -q NVIDIA || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
KVSCOPE_BIN=$B python3 -m pytest -q -p no:cacheprovider tools/tests "$@"
