"""Shared helpers of the hardening battery (tests/test_hardening_*.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from beirx.cli import main
from conftest import TINY_CORPUS, TINY_QRELS, TINY_QUERIES
from extras import needs

CORPUS = TINY_CORPUS
QUERIES = TINY_QUERIES[:3]  # the judged ones
QRELS = TINY_QRELS
# BM25 on the clean tiny dataset ranks every judged document first: hand-checked in test_clean_metrics.
CLEAN = {"NDCG@10": 1.0, "Recall@100": 1.0, "MRR@10": 1.0}


def eval_cli(dataset: Path, out: Path, *extra: str) -> tuple[int, dict | None]:
    """``beirx eval`` on ``dataset`` (BM25 unless ``extra`` says otherwise): exit code and the results JSON."""
    code = main(["eval", "--dataset", str(dataset), "--output", str(out), *extra])
    files = sorted(out.glob("*.json")) if out.is_dir() else []
    return code, (json.loads(files[-1].read_text(encoding="utf-8")) if code == 0 and files else None)


def metrics_of(results: dict) -> dict[str, float]:
    return {k: results["metrics"][k] for k in CLEAN}


def build_tiny_st(folder: Path, words: list[str] | None = None, seed: int = 7, max_seq_length: int = 48) -> Path:
    """A 2-layer, 16-dim BERT with mean pooling and seeded random weights, saved as a sentence-transformers
    folder: loads in well under a second, so cache tests can run the real dense path many times. Its vocabulary:
    ``words`` (default: the tiny dataset's)."""
    import string

    import sentence_transformers as st
    import torch
    import transformers

    if words is None:
        words = sorted({w.strip(".;,").lower() for d in CORPUS + QUERIES
                        for w in (d.get("title", "") + " " + d["text"]).split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.punctuation) + [w for w in words if w]
    bert = folder.parent / (folder.name + "-bert")
    torch.manual_seed(seed)
    tokenizer = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(dict.fromkeys(vocab))})
    config = transformers.BertConfig(vocab_size=len(tokenizer.vocab), hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config, add_pooling_layer=False).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    model = st.SentenceTransformer(str(bert), device="cpu")
    model.max_seq_length = max_seq_length
    model.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_st(tmp_path_factory) -> Path:
    """:func:`build_tiny_st`, once per session (import it into a test module to use it)."""
    needs("sentence_transformers", "neural")
    return build_tiny_st(tmp_path_factory.mktemp("models") / "tiny-st")


def small_fs_runner():
    """How to run a shell script with a small tmpfs of its own, or None where mounting is not allowed.

    ``unshare -Urm`` (a private user and mount namespace: no root needed, and the mount disappears with the
    script) where unprivileged namespaces are allowed; plain ``sh`` when this process is root and may mount.
    The script gets ``mount``/``umount`` rights over the folders it mounts; nothing outside it sees them.
    """
    import shutil
    import subprocess

    probes = [["unshare", "-Urm", "sh", "-c"]] if shutil.which("unshare") else []
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        probes.append(["sh", "-c"])
    for prefix in probes:
        with tempfile.TemporaryDirectory() as probe:
            ok = subprocess.run([*prefix, f"mount -t tmpfs -o size=64k tmpfs {probe} && umount {probe}"],
                                capture_output=True).returncode == 0
        if ok:
            return prefix
    return None


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released): connecting to it is refused at once."""
    from local_processes import free_port

    return free_port()
