"""NPU backend: the AscendC kernels through the torch_npu extension, and torchair converters.

Registers only where torch_npu imports (which needs CANN): the PrivateUse1 implementations of
libcustom_ops_npu.so (built by scripts/build_npu.sh, see docs/NPU.md) and, where torchair
imports, the graph-mode converters. Anywhere else this package registers nothing, so
`import custom_ops` works on every machine.
"""
import importlib.util
import warnings
from pathlib import Path

EXTENSION = Path(__file__).with_name("libcustom_ops_npu.so")


def _torch_npu_imports() -> bool:
    if importlib.util.find_spec("torch_npu") is None:
        return False
    try:
        import torch_npu  # noqa: F401
    except (ImportError, OSError, RuntimeError) as exc:  # installed, but no CANN runtime here
        warnings.warn(f"torch_npu is installed but does not import ({exc}); NPU ops are not registered")
        return False
    return True


def _register() -> None:
    import torch

    if EXTENSION.exists():
        torch.ops.load_library(str(EXTENSION))
    else:
        warnings.warn(f"{EXTENSION.name} is not built: NPU calls of custom ops will fail; "
                      "build it with scripts/build_npu.sh (docs/NPU.md)")
    if importlib.util.find_spec("torchair") is not None:
        from . import converters  # noqa: F401  (registration side effects)


REGISTERED = _torch_npu_imports()
if REGISTERED:
    _register()


def available() -> bool:
    """Whether the NPU kernels can run here: torch_npu imports, the op package is built, and an
    NPU is present (what the NPU tests need)."""
    import torch
    return REGISTERED and EXTENSION.exists() and torch.npu.is_available()
