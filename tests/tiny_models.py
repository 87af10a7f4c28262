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


def build_tiny_comet(work: Path, tokenizer_folder: Path) -> Path:
    """A random-weight CometKiwi-shaped model (``unified_metric``, input segments ``mt, src``) saved as COMET
    publishes one (``checkpoints/model.ckpt`` + ``hparams.yaml``), on a 2-layer XLM-R encoder with the
    tokenizer of ``tokenizer_folder`` (an XLM-R tokenizer: multilingual-e5-small's). Needs unbabel-comet."""
    import shutil

    import pytorch_lightning
    import torch
    import yaml
    from comet.models import UnifiedMetric

    encoder = work / "encoder"
    encoder.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_folder / name, encoder / name)
    config = json.loads((tokenizer_folder / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2)
    (encoder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    torch.manual_seed(0)
    model = UnifiedMetric(pretrained_model=str(encoder), hidden_sizes=[32], input_segments=["mt", "src"],
                          word_layer=2, layer_transformation="softmax", load_pretrained_weights=False,
                          local_files_only=True)
    folder = work / "tiny-cometkiwi"
    (folder / "checkpoints").mkdir(parents=True)
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                "pytorch-lightning_version": pytorch_lightning.__version__}, folder / "checkpoints" / "model.ckpt")
    (folder / "hparams.yaml").write_text(yaml.safe_dump({**dict(model.hparams), "class_identifier": "unified_metric"}),
                                         encoding="utf-8")
    return folder


#: A Gemma-style chat template (turns between <start_of_turn>/<end_of_turn>; a system message is folded
#: into the first user turn, as Gemma's own template does).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(system='', first=true) %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{% set ns.system = message['content'] + '\n\n' %}"
    "{% else %}<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{% if ns.first %}{{ ns.system }}{% set ns.first = false %}{% endif %}"
    "{{ message['content'] }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def build_tiny_causal_lm(work: Path, lines: list[str], *, vocab_size: int = 320, name: str = "tiny-chat-lm",
                         **config) -> Path:
    """A random-weight Llama-architecture causal LM with a byte-level BPE vocabulary trained on ``lines`` and
    a chat template, saved as an ordinary Hugging Face folder (``AutoModelForCausalLM``/``AutoTokenizer``).
    Its output is noise: it exercises loading, chat templates, batched generation and output validation
    (``config`` overrides LlamaConfig's tiny defaults)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>",
                                   unk_token="<unk>", pad_token="<pad>",
                                   additional_special_tokens=["<start_of_turn>", "<end_of_turn>"])
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    settings = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                "num_key_value_heads": 1, "max_position_embeddings": 1024, **config}
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(fast), bos_token_id=fast.bos_token_id,
                                         eos_token_id=[fast.eos_token_id, fast.convert_tokens_to_ids("<end_of_turn>")],
                                         pad_token_id=fast.pad_token_id, tie_word_embeddings=True, **settings))
    folder = work / name
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_tiny_splade(folder: Path, words: list[str], logits: dict[tuple[str, str], float]) -> Path:
    """A BertForMaskedLM whose MLM logits are set by hand: reading token ``t`` gives term ``j`` the logit
    ``logits[(t, j)]`` (0 when absent), whatever the context; special tokens give every term 0.

    How: no transformer layers; token ``t``'s embedding is ``(e_t, -e_t)`` (mean 0), position and type
    embeddings are 0, both LayerNorms have eps 2**40 and weight 2**20 (so they return their zero-mean input,
    up to ~1e-9 from torch's running-mean arithmetic), the head's dense layer is the identity with a linear
    activation, and the decoder's row for term ``j`` holds ``logit + 2**-8`` with a bias of ``-2**-8``, so set
    logits come out exact and every other one is about ``-2**-8`` (ReLU makes its weight exactly 0). SPLADE
    weights are then ``max_t log(1 + relu(logits[(t, j)]))``, computable by hand.
    """
    import torch
    import transformers

    vocab = {w: i for i, w in enumerate(SPECIAL_TOKENS + list(words))}
    size = len(vocab)
    config = transformers.BertConfig(vocab_size=size, hidden_size=2 * size, num_hidden_layers=0, num_attention_heads=1,
                                     intermediate_size=4, hidden_act="linear", layer_norm_eps=2.0 ** 40,
                                     max_position_embeddings=64, type_vocab_size=2, tie_word_embeddings=False)
    model = transformers.BertForMaskedLM(config)
    eye = torch.eye(size)
    for special in SPECIAL_TOKENS:
        eye[vocab[special], vocab[special]] = 0.0
    decoder = torch.zeros(size, 2 * size)
    offset = 2.0 ** -8
    for (token, term), value in logits.items():
        decoder[vocab[term], vocab[token]] = value + offset
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight.copy_(torch.cat([eye, -eye], dim=1))
        model.bert.embeddings.position_embeddings.weight.zero_()
        model.bert.embeddings.token_type_embeddings.weight.zero_()
        head = model.cls.predictions
        for norm in (model.bert.embeddings.LayerNorm, head.transform.LayerNorm):
            norm.weight.fill_(2.0 ** 20)
            norm.bias.zero_()
        head.transform.dense.weight.copy_(torch.eye(2 * size))
        head.transform.dense.bias.zero_()
        head.decoder.weight.copy_(decoder)
        head.decoder.bias.fill_(-offset)
        head.bias.fill_(-offset)
    model.save_pretrained(folder)
    transformers.BertTokenizer(vocab=vocab).save_pretrained(folder)
    return folder
