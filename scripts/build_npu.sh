#!/usr/bin/env bash
# Builds and installs the NPU half on a machine with CANN, torch_npu and an Ascend NPU
# (docs/NPU.md): the portable library and its C++ tests, the AscendC op package (an msopgen
# project fed with op_host/ and op_kernel/), installed under $OPP_PREFIX, and the torch_npu
# extension custom_ops/backends/npu/libcustom_ops_npu.so, which `import custom_ops` then loads.
# Usage: source <CANN>/set_env.sh && SOC_VERSION=Ascend910B1 scripts/build_npu.sh
#        (SOC_VERSION: the chip name `npu-smi info` shows, e.g. Ascend910B1 on an Atlas A2)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ASCEND_HOME_PATH:?is not set: source the set_env.sh of the CANN toolkit first}"
SOC_VERSION=${SOC_VERSION:-Ascend910B1}
BUILD=${BUILD:-build/npu}
OPP_PREFIX=${OPP_PREFIX:-$HOME/.custom_ops/opp}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DASCEND_HOME_PATH="$ASCEND_HOME_PATH" \
      -DNPU_SOC_VERSION="$SOC_VERSION" -DPython3_EXECUTABLE="$(command -v python)"
cmake --build "$BUILD" -j"$(nproc)"
(cd "$BUILD" && ctest --output-on-failure)  # ctest --test-dir needs CMake 3.20

package=$(ls "$BUILD"/op_host/npu_op_project/build_out/custom_opp_*.run)
mkdir -p "$OPP_PREFIX"
"$package" --quiet --install-path="$OPP_PREFIX"
vendor=$OPP_PREFIX/vendors/customize
cat <<MSG
Installed the op package in $vendor and $(ls custom_ops/backends/npu/libcustom_ops_npu.so).
Before running custom_ops on the NPU:
  export ASCEND_CUSTOM_OPP_PATH=$vendor:\${ASCEND_CUSTOM_OPP_PATH:-}
  export LD_LIBRARY_PATH=$vendor/op_api/lib:\${LD_LIBRARY_PATH:-}
MSG
