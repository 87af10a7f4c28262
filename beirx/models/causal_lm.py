"""A causal language model in this process (transformers): loading, next-token log-probabilities, greedy answers.

It is what :class:`beirx.models.llm.LocalLLM` runs (answers to requests, and label log-probabilities from the
next-token distribution). Requests and replies are the LLM client's (:class:`~beirx.models.llm.Request`,
:class:`~beirx.models.llm.Reply`), so code that talks to a server and code that runs a local model handle
answers and token usage the same way.

Batches are left-padded (every row ends at the same position), with position ids counted over the real
tokens only, so a row's numbers do not depend on what it is batched with; only the last position's logits
are computed (``logits_to_keep=1``: a Gemma vocabulary of 262k entries times every position would not
fit). Chat requests go through the tokenizer's chat template (with the generation prompt); a model without
one reads the messages' contents joined by blank lines. Precision: bfloat16 on CUDA where supported, else
float16 there, float32 on the CPU; the model is loaded once per process (:func:`beirx.models.loaded.cached`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from beirx.errors import require
from beirx.models.files import ModelFiles
from beirx.models.llm.calls import CHAT, Reply, Request
from beirx.models.llm.usage import Usage
from beirx.models.loaded import cached


def causal_lm(files: ModelFiles, device: str):
    """``(tokenizer, model)`` for ``files`` on ``device`` (tokenizer padding on the left, a pad token set)."""
    def load():
        transformers = require("transformers", "neural", "a local causal language model")
        torch = require("torch", "neural", "a local causal language model")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(files.folder))
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        dtype = torch.float32
        if device.startswith("cuda"):
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        model = transformers.AutoModelForCausalLM.from_pretrained(str(files.folder), dtype=dtype)
        return tokenizer, model.to(device).eval()

    return cached(("causal-lm", str(files.folder), device), load)


def prompt_text(tokenizer, request: Request) -> str:
    """What the model reads for ``request``: the chat template's rendering, or the plain prompt."""
    if request.kind != CHAT:
        return request.prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(list(request.messages), tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m.get("content", "") for m in request.messages)


def encode(tokenizer, text: str) -> list[int]:
    """The token ids the model reads for ``text`` (a chat rendering carries its own BOS: none added)."""
    bos = tokenizer.bos_token
    return tokenizer(text, add_special_tokens=not (bos and text.startswith(bos)))["input_ids"]


def _batch(tokenizer, texts: Sequence[str], device: str) -> dict[str, Any]:
    """Left-padded inputs with position ids over the real tokens; a chat rendering carries its own BOS."""
    torch = require("torch", "neural", "a local causal language model")
    encoded = [encode(tokenizer, t) for t in texts]
    width = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in encoded], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in encoded], dtype=torch.long)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return {"input_ids": input_ids.to(device), "attention_mask": mask.to(device), "position_ids": positions.to(device)}


def next_token_logprobs(tokenizer, model, texts: Sequence[str], device: str):
    """``log softmax`` of the next-token logits after each text (a ``len(texts) x vocabulary`` float32 tensor)."""
    torch = require("torch", "neural", "a local causal language model")
    inputs = _batch(tokenizer, texts, device)
    with torch.inference_mode():
        logits = model(**inputs, logits_to_keep=1).logits[:, -1, :].float()
    return torch.log_softmax(logits, dim=-1).cpu()


def generate(tokenizer, model, requests: Sequence[Request], device: str, temperature: float = 0.0,
             seed: int | None = None) -> list[Reply]:
    """Answers to ``requests`` generated together (greedy at ``temperature`` 0, else sampled, seeded by
    ``seed``); each stops at the end of its turn or at its own ``max_tokens`` (``finish_reason``
    ``stop``/``length``) and at its stop strings; usage counts the tokens read and generated."""
    torch = require("torch", "neural", "a local causal language model")
    inputs = _batch(tokenizer, [prompt_text(tokenizer, r) for r in requests], device)
    inputs.pop("position_ids")  # generate() derives them from the mask
    limit = max(r.max_tokens or 256 for r in requests)
    sampling = {"do_sample": False} if not temperature else {"do_sample": True, "temperature": float(temperature)}
    if seed is not None:
        torch.manual_seed(seed)
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=limit, pad_token_id=tokenizer.pad_token_id, **sampling)
    eos = model.generation_config.eos_token_id
    stops = {tokenizer.eos_token_id, *(eos if isinstance(eos, (list, tuple)) else [eos])} - {None}
    replies = []
    for request, row, mask in zip(requests, output[:, inputs["input_ids"].shape[1]:].tolist(), inputs["attention_mask"]):
        end = next((i for i, token in enumerate(row) if token in stops), None)
        own_limit = request.max_tokens or len(row)
        kept, finish = (row[:end], "stop") if end is not None and end <= own_limit else (row[:own_limit], "length")
        text = tokenizer.decode(kept, skip_special_tokens=True)
        for stop in request.stop:
            if stop in text:
                text, finish = text[:text.index(stop)], "stop"
        replies.append(Reply(text, finish, Usage(int(mask.sum()), len(kept))))
    return replies
