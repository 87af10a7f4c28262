"""Tiny random-weight models built on the fly and saved like Hub checkpoints (loaded through the same code path)."""

from __future__ import annotations

import json
from pathlib import Path


def build_tiny_marian(work: Path, lines: list[str], *, vocab_size: int, max_length: int, name: str = "opus-mt-tiny-en-es",
                      spm_options: dict | None = None, **config) -> Path:
    """A random-weight Marian MT model with a SentencePiece vocabulary trained on ``lines`` (``spm_options``
    override the trainer's, ``config`` MarianConfig's). Tests build tiny ones; benchmarks/translate_speed.py an
    OPUS-MT-sized one."""
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    (work / "text.txt").write_text("\n".join(lines), encoding="utf-8")
    options = {"model_type": "unigram", "character_coverage": 1.0, "bos_id": -1, "eos_id": -1, "unk_id": 0,
               "pad_id": -1, "minloglevel": 2, **(spm_options or {})}
    spm.SentencePieceTrainer.train(input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=vocab_size,
                                   **options)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    (work / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    tokenizer = MarianTokenizer(vocab=str(work / "vocab.json"), source_spm=str(work / "spm.model"),
                                target_spm=str(work / "spm.model"), model_max_length=max_length)
    torch.manual_seed(0)
    settings = {"d_model": 8, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 1,
                "decoder_attention_heads": 1, "encoder_ffn_dim": 8, "decoder_ffn_dim": 8, **config}
    model_config = MarianConfig(vocab_size=len(vocab), max_position_embeddings=max_length, pad_token_id=vocab["<pad>"],
                                eos_token_id=0, decoder_start_token_id=vocab["<pad>"], **settings)
    folder = work / name
    MarianMTModel(model_config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
