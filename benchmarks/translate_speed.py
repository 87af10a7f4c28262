"""Translation speed on CPU: ``hf`` (transformers, float32) against ``ctranslate2`` (int8) on the same
Marian model, and a fully cached rerun of the pipeline against its first run.

The model has the OPUS-MT architecture (MarianMT: d_model 512, 6 encoder + 6 decoder layers, 8 heads,
FFN 2048, ~58k shared vocabulary) with random weights, since the Hub is unreachable: speed depends on
the architecture, not on the weights. The vocabulary is a SentencePiece BPE model trained on the
SciFact corpus. Random weights never emit end-of-sentence on cue, so the output length is fixed for
both engines (min = max new tokens = ``--out-tokens``): both do the same number of decoder steps and
tokens/s = segments x out-tokens / wall time. Inputs are real SciFact sentences, length-sorted and in
batches of ``--batch-size`` as the pipeline sends them, greedy decoding, ``--threads`` intra-op threads
for both engines (default: all cores; on a shared, oversubscribed machine PyTorch's OpenMP threads
spin-wait for each other and ``--threads 1`` gives the steadier comparison). Target: ctranslate2 >= 3x hf.

Run:  python benchmarks/translate_speed.py [--scifact ../shared/data/beir/scifact] [--segments 256]
      [--out-tokens 32] [--batch-size 16] [--threads N] [--work /tmp/beirx-translate-speed]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tiny_models: the Marian builder shared with the tests


def build_marian(work: Path, scifact: Path, vocab_size: int = 58_000) -> Path:
    """An OPUS-MT-sized Marian model with random weights and a SciFact-trained vocabulary (cached in ``work``)."""
    model_dir = work / "marian-opus-size"
    if (model_dir / "model.safetensors").is_file():
        return model_dir
    from tiny_models import build_tiny_marian  # the tests' builder, at OPUS-MT size

    work.mkdir(parents=True, exist_ok=True)
    lines = []
    with open(scifact / "corpus.jsonl", encoding="utf-8") as src:
        for line in src:
            doc = json.loads(line)
            lines += [doc["title"], doc["text"]]
    return build_tiny_marian(
        work, lines, vocab_size=vocab_size, max_length=512, name=model_dir.name,
        spm_options={"model_type": "bpe", "hard_vocab_limit": False, "num_threads": os.cpu_count()},
        d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048, forced_eos_token_id=0, scale_embedding=True,
        share_encoder_decoder_embeddings=True)


def sentences(scifact: Path, count: int) -> list[str]:
    from beirx.translate.planning.segment import split_sentences

    out: list[str] = []
    with open(scifact / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            out += [s for s, is_seg in split_sentences(json.loads(line)["text"], "en") if is_seg]
            if len(out) >= count:
                break
    return sorted(out[:count], key=lambda s: (len(s), s))


def timed(translator, segments: list[str], batch_size: int) -> float:
    translator.translate_batch(segments[:2])  # warm-up: first-call allocations and lazy initialisation
    start = time.perf_counter()
    for i in range(0, len(segments), batch_size):
        translator.translate_batch(segments[i:i + batch_size])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--segments", type=int, default=256)
    parser.add_argument("--out-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--cache-docs", type=int, default=100, help="documents in the cached-rerun measurement")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="intra-op threads of both engines")
    parser.add_argument("--work", type=Path, default=Path("/tmp/beirx-translate-speed"))
    args = parser.parse_args()
    os.environ.setdefault("BEIRX_HOME", str(args.work / "beirx_home"))

    import torch

    from beirx.translate.backends.ctranslate2 import CT2Translator
    from beirx.translate.backends.hf import HFTranslator

    threads = args.threads
    torch.set_num_threads(threads)
    start = time.perf_counter()
    model = build_marian(args.work, args.scifact)
    build_s = time.perf_counter() - start
    segments = sentences(args.scifact, args.segments)
    n = args.out_tokens
    hf = HFTranslator("en", "es", str(model), beam_size=1, max_new_tokens=n, min_new_tokens=n)
    start = time.perf_counter()
    ct2 = CT2Translator("en", "es", str(model), beam_size=1, max_decoding_length=n, min_decoding_length=n,
                        intra_threads=threads)
    convert_s = time.perf_counter() - start
    hf_s = timed(hf, segments, args.batch_size)
    ct2_s = timed(ct2, segments, args.batch_size)
    generated = len(segments) * n
    input_tokens = sum(hf.count_tokens(s) for s in segments)

    cached = cached_rerun(ct2, args.scifact, args.cache_docs, args.work)
    print(json.dumps({
        "model": {"architecture": "MarianMTModel (OPUS-MT size, random weights)", "vocab": hf.net.config.vocab_size,
                  "parameters": sum(p.numel() for p in hf.net.parameters()), "build_s": round(build_s, 1),
                  "ct2_convert_s": round(convert_s, 1)},
        "segments": len(segments), "input_tokens": input_tokens, "output_tokens_each": n,
        "batch_size": args.batch_size, "threads": threads,
        "hf_float32": {"seconds": round(hf_s, 2), "output_tokens_per_s": round(generated / hf_s, 1)},
        "ctranslate2_int8": {"seconds": round(ct2_s, 2), "output_tokens_per_s": round(generated / ct2_s, 1)},
        "speedup_ctranslate2_over_hf": round(hf_s / ct2_s, 2),
        "pipeline_cached_rerun": cached,
    }, indent=2))


def cached_rerun(translator, scifact: Path, docs: int, work: Path) -> dict:
    """First pipeline run (empty memory) against a rerun served entirely from the memory."""
    import shutil
    import tempfile

    from beirx.data import beir_io
    from beirx.data.dataset import BeirDataset
    from beirx.translate.pipeline import translate_dataset
    from beirx.translate.translation_memory import TranslationMemory

    root = Path(tempfile.mkdtemp(prefix="speed-src-", dir=work))
    corpus = list(beir_io.iter_corpus(scifact / "corpus.jsonl"))[:docs]
    beir_io.write_corpus(root / "corpus.jsonl", corpus)
    beir_io.write_queries(root / "queries.jsonl", list(beir_io.iter_queries(scifact / "queries.jsonl"))[:docs])
    (root / "qrels").mkdir()
    shutil.copy(scifact / "qrels" / "test.tsv", root / "qrels" / "test.tsv")
    dataset = BeirDataset(root, name="scifact")
    times = []
    with TranslationMemory(root / "tm.sqlite") as tm:
        for run in ("first", "rerun"):
            start = time.perf_counter()
            manifest = translate_dataset(dataset, root / f"out-{run}", translator, tm, progress=False)
            times.append((time.perf_counter() - start, manifest["counts"]))
    identical = all((root / "out-first" / f).read_bytes() == (root / "out-rerun" / f).read_bytes()
                    for f in ("corpus.jsonl", "queries.jsonl"))
    return {"documents": docs, "first_s": round(times[0][0], 2), "rerun_s": round(times[1][0], 2),
            "speedup": round(times[0][0] / times[1][0], 1), "first_counts": times[0][1],
            "rerun_translated": times[1][1]["translated"], "identical_output": identical}


if __name__ == "__main__":
    main()
