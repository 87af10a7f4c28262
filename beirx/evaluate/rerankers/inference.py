"""Torch plumbing shared by the neural rerankers: device and precision, length-sorted batches."""

from __future__ import annotations

from beirx.errors import BeirxError, require
from beirx.models.device import choose_device

DTYPES = ("auto", "float32", "float16", "bfloat16")


def torch_module():
    return require("torch", "neural", "neural reranking")


def torch_device(device: str | None):
    """The torch.device of :func:`beirx.models.device.choose_device` (None: CUDA when available, else CPU)."""
    return torch_module().device(choose_device(device))


def resolve_dtype(dtype: str, device, half: str = "float16"):
    """The weights' precision: ``auto`` is ``half`` on CUDA and float32 elsewhere (CPUs gain nothing)."""
    torch = torch_module()
    if dtype not in DTYPES:
        raise BeirxError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if dtype == "auto":
        dtype = half if device.type == "cuda" else "float32"
    return getattr(torch, dtype)


def length_batches(lengths: list[int], batch_size: int, sort: bool = True) -> list[list[int]]:
    """Indices grouped into batches; with ``sort``, longest first so each batch pads to similar lengths.

    Padding is wasted compute: a batch costs as much as its longest member times its size. Sorting by
    length (as sentence-transformers' ``encode`` does) makes batches nearly pad-free; longest first puts
    an out-of-memory failure at the very start rather than after an hour.
    """
    if batch_size < 1:
        raise BeirxError(f"batch size must be at least 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i]) if sort else list(range(len(lengths)))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]

