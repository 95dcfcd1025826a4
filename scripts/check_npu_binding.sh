#!/usr/bin/env bash
# Compile-only check of the torch_npu binding (custom_ops/csrc/npu) on a machine without CANN:
# downloads the torch-npu wheel matching the installed torch (about 45 MB), unpacks its headers
# (torch_npu, op-plugin, acl) and runs g++ -fsyntax-only on every binding file, so a wrong aclnn
# argument type or a torch_npu API change shows without an NPU. Not run by CI (it downloads).
# Usage: scripts/check_npu_binding.sh   (PYTHON=..., WORK=<dir to keep the wheel>)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
WORK=${WORK:-$(mktemp -d)}
torch_version=$($PY -c "import torch; print(torch.__version__.split('+')[0])")
# op-plugin headers branch on CURRENT_VERSION: V2R<minor> = minor - 1 (torch_npu's own build sets it).
op_plugin_version=$($PY -c "import torch; print(int(torch.__version__.split('.')[1]) - 1)")
$PY -m pip download --no-deps --quiet "torch-npu==${torch_version}" -d "$WORK"
unzip -q -o "$WORK"/torch_npu-"${torch_version}"-*.whl 'torch_npu/include/*' -d "$WORK"
inc=$WORK/torch_npu/include
torch_inc=$($PY -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
py_inc=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
for src in custom_ops/csrc/npu/*.cpp; do
    echo "g++ -fsyntax-only $src"
    # shellcheck disable=SC2086  # torch_inc is a list of -I flags
    g++ -std=c++17 -fsyntax-only -Wno-c++20-extensions -DCURRENT_VERSION="$op_plugin_version" -I"$py_inc" \
        $torch_inc -I"$inc" -I"$inc/third_party/op-plugin" -I"$inc/third_party/acl/inc" -Iop_host/common "$src"
done
echo "the binding compiles against the headers of torch-npu ${torch_version}"
