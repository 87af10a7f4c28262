"""Where a model runs: one rule for every backend (dense retrieval, rerankers, translators, quality).

No choice (``None`` or ``"auto"``) means CUDA when a GPU is visible, else the CPU. An explicit device
(``--device``, a ``device=`` option) is checked up front, so a typo or a CUDA request on a machine without a
GPU fails with a clear message before any model is loaded, not deep inside torch. Precision follows the
device in each backend (half precision only on CUDA), so recording the device explains the numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from beirx.errors import BeirxError, require

# torch's device strings beirx accepts: a type and an optional index ("cuda:1").
_DEVICE = re.compile(r"^(cpu|cuda|mps)(:\d+)?$")


def torch_cuda_available() -> bool:
    """Whether torch sees a CUDA device (the default probe; imports torch)."""
    return bool(require("torch", "neural", "running a neural model").cuda.is_available())


def choose_device(device: str | None = None, cuda_available: Callable[[], bool] = torch_cuda_available) -> str:
    """``device`` validated, or ``"cuda"``/``"cpu"`` when it is ``None``/``"auto"``.

    ``cuda_available`` probes for a GPU (torch by default; CTranslate2 passes its own, so it needs no torch).
    """
    if device is None or device == "auto":
        return "cuda" if cuda_available() else "cpu"
    text = str(device).strip().lower()
    if not _DEVICE.match(text):
        raise BeirxError(f"invalid device {device!r}: use auto, cpu, cuda, cuda:N or mps")
    if text.startswith("cuda") and not cuda_available():
        raise BeirxError(f"device {device!r} requested but CUDA is not available; use --device cpu")
    return text
