"""Reranking throughput (pairs/s) of each reranker on CPU, with length-sorted batches and without.

Candidates are real: BM25 (beirx, English pack) top ``--depth`` for the first ``--queries`` SciFact test
queries, so document lengths follow SciFact's (titles + abstracts, a few hundred tokens). Models have
random weights but real sizes, so the speed is that of the real thing:

- cross-encoder: MiniLM-L6-sized BERT (6 layers, 384 hidden, 12 heads, 1536 FFN, 30,522 WordPiece vocab),
  max length 512;
- monoT5: t5-small-sized T5 (6+6 layers, d_model 512, 8 heads, 2048 FFN, 32k Unigram vocab), max length 512;
- ColBERT: the real multilingual-e5-small backbone in the colbert-ai layout with a random 384->128
  projection, doc_maxlen 180 (BEIR-PL's), query_maxlen 32.

Tokenizers are trained on the SciFact corpus (WordPiece / Unigram, as BERT / T5 use) so token counts are
realistic. The baseline, in the same run and on the same pairs, is ``sort_by_length=False``: batches in
the order the pairs arrive (grouped by document, i.e. unrelated to length). Each timing follows a short
warm-up; the pair cache is off; the two settings alternate ``--repeats`` times and the best rate of
each is kept. The machine's load average is printed with the figures because it
moves absolute numbers (not so much the ratio).

Run:  python benchmarks/rerank_speed.py [--queries 8] [--depth 20] [--repeats 2] [--workdir /tmp/beirx-rerank-speed]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import SCIFACT, e5_default  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from beirx.data.dataset import BeirDataset  # noqa: E402
from beirx.evaluate.rerankers import RERANKERS  # noqa: E402
from beirx.evaluate.retrievers.bm25 import BM25Retriever  # noqa: E402
from beirx.language_packs import get_pack  # noqa: E402


def corpus_texts(dataset: BeirDataset) -> list[str]:
    return [doc.joined() for doc in dataset.corpus.values()]


def build_cross_encoder(folder: Path, texts: list[str]) -> Path:
    import torch
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    if (folder / "config.json").is_file():
        return folder
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=30522, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tokenizer = transformers.BertTokenizer(vocab=wordpiece.get_vocab(), model_max_length=512)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(tokenizer), hidden_size=384, num_hidden_layers=6,
                                     num_attention_heads=12, intermediate_size=1536, num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_t5(folder: Path, texts: list[str]) -> Path:
    import torch
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    if (folder / "config.json").is_file():
        return folder
    unigram = Tokenizer(models.Unigram())
    unigram.normalizer = normalizers.NFKC()
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(texts, trainers.UnigramTrainer(
        vocab_size=32000, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"))
    pieces = [tuple(p) for p in json.loads(unigram.to_str())["model"]["vocab"]]
    pieces += [(p, -20.0) for p in ("▁true", "▁false") if p not in dict(pieces)]
    tokenizer = transformers.T5Tokenizer(vocab=pieces, extra_ids=0)
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=len(pieces), d_model=512, d_kv=64, d_ff=2048, num_layers=6,
                                   num_decoder_layers=6, num_heads=8, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1)
    transformers.T5ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_colbert(folder: Path, e5: Path) -> Path:
    """colbert-ai layout, sharded: e5-small's weight file (linked) + a random projection shard."""
    import shutil

    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    if (folder / "config.json").is_file():
        return folder
    folder.mkdir(parents=True)
    (folder / "backbone.safetensors").symlink_to(e5.resolve() / "model.safetensors")
    save_file({"linear.weight": torch.randn(128, 384, generator=torch.Generator().manual_seed(0)) / 384 ** 0.5},
              str(folder / "linear.safetensors"))
    with safe_open(str(e5 / "model.safetensors"), framework="pt") as fh:
        weight_map = {k: "backbone.safetensors" for k in fh.keys()}
    weight_map["linear.weight"] = "linear.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    config = json.loads((e5 / "config.json").read_text())
    config["architectures"] = ["HF_ColBERT"]
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(e5 / name, folder / name)
    (folder / "artifact.metadata").write_text(json.dumps({"query_maxlen": 32, "doc_maxlen": 180, "dim": 128}))
    return folder


def timed_rerank(reranker, queries, corpus, first_stage, depth) -> float:
    start = time.perf_counter()
    reranker.rerank(queries, corpus, first_stage, depth=depth)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--e5", type=Path, **e5_default())
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/beirx-rerank-speed"))
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--rerankers", nargs="+", default=["cross-encoder", "monot5", "colbert"])
    parser.add_argument("--repeats", type=int, default=2, help="timings per setting, alternating; best kept")
    args = parser.parse_args()

    import torch

    os.environ.setdefault("BEIRX_HOME", str(args.workdir / "beirx_home"))
    dataset = BeirDataset(args.scifact, name="scifact")
    queries, _ = dataset.queries_for_split("test")
    queries = {qid: queries[qid] for qid in sorted(queries)[:args.queries]}
    bm25 = BM25Retriever(get_pack("en"), show_progress=False)
    bm25.index(dataset)
    first_stage = bm25.search(queries, args.depth)
    corpus = dataset.corpus
    pairs = sum(min(len(docs), args.depth) for docs in first_stage.values())
    unique_docs = len({did for docs in first_stage.values() for did in docs})

    texts = corpus_texts(dataset)
    builders = {"cross-encoder": lambda: build_cross_encoder(args.workdir / "minilm-l6-random", texts),
                "monot5": lambda: build_t5(args.workdir / "t5-small-random", texts),
                "colbert": lambda: build_colbert(args.workdir / "e5-small-colbert-ai", args.e5)}
    print(f"SciFact: {len(queries)} test queries x BM25 top {args.depth} = {pairs} pairs ({unique_docs} distinct "
          f"documents); CPU, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'reranker':<14} {'sorted pairs/s':>15} {'unsorted pairs/s':>17} {'ratio':>7}  load avg (1 min)")
    for name in args.rerankers:
        model = builders[name]()
        rerankers = {sort: RERANKERS.get(name)(str(model), show_progress=False, use_cache=False, sort_by_length=sort)
                     for sort in (True, False)}
        warm_q = next(iter(queries))
        for reranker in rerankers.values():
            reranker.rerank({warm_q: queries[warm_q]}, corpus, first_stage, depth=2)  # warm-up
        rates = {True: 0.0, False: 0.0}
        loads = []
        for _ in range(args.repeats):  # alternate, so load changes hit both settings alike
            for sort, reranker in rerankers.items():
                loads.append(os.getloadavg()[0])
                rates[sort] = max(rates[sort], pairs / timed_rerank(reranker, queries, corpus, first_stage, args.depth))
        loads.append(os.getloadavg()[0])
        print(f"{name:<14} {rates[True]:>15.1f} {rates[False]:>17.1f} {rates[True] / rates[False]:>6.2f}x  "
              f"{min(loads):.1f}-{max(loads):.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
