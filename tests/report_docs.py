"""Hand-made results documents with known per-query scores, for the report tests.

Four judged queries; NDCG@10 and Recall@100 per query are chosen by hand so every table cell can be
computed on paper. Metrics are the per-query means, as beirx's evaluation writes them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from artifact_fixtures import quality_report, translation_manifest, with_query_similarity
from beirx.artifacts import TranslationManifest

QIDS = ["q1", "q2", "q3", "q4"]

# (system, language pair) -> per-query NDCG@10 and Recall@100
SCORES = {
    ("bm25", "en"): ([1.0, 0.5, 0.0, 0.5], [1.0, 1.0, 0.0, 1.0]),
    ("bm25", "pl"): ([0.5, 0.5, 0.0, 0.25], [1.0, 0.5, 0.0, 1.0]),
    ("bm25", "pl2en"): ([0.75, 0.25, 0.0, 0.5], [1.0, 0.5, 0.5, 1.0]),
    ("dense", "en"): ([1.0, 1.0, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]),
    ("dense", "pl"): ([1.0, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 0.5]),
    ("dense", "pl2en"): ([1.0, 0.75, 0.25, 0.5], [1.0, 1.0, 0.5, 1.0]),
}
SIMILARITY = {"q1": 0.95, "q2": 0.6, "q3": 0.8, "q4": 0.7}


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def document(system: str, pair: str, translated: Path | None = None, efficiency: dict | None = None) -> dict:
    """A beirx.results/2 document (the contract in COORDINATION.md) for ``system`` on ``pair``."""
    ndcg, recall = SCORES[(system, pair)]
    query_lang, corpus_lang = (pair.split("2") if "2" in pair else (pair, pair))
    source = str(translated) if corpus_lang == "pl" and translated else "/data/toy"
    doc = {
        "schema": "beirx.results/2", "created": "2026-11-23T12:00:00+00:00",
        "dataset": {"name": "toy", "source": source, "language": corpus_lang, "query_language": query_lang,
                    "split": "test", "checksum": f"sha256:{corpus_lang}checksum",
                    "translated_from": "en" if corpus_lang == "pl" else None},
        "query_dataset": None,
        "system": {"label": system, "tag": system, "kind": "retriever",
                   "description": {"retriever": system, **({"model": "toy-e5", "revision": "sha256:abc"}
                                                           if system == "dense" else {})}},
        "language_pack": {"code": corpus_lang}, "language_source": "flag",
        "evaluation": {"k_values": [10, 100], "num_queries": 4, "queries_without_results": []},
        "metrics": {"NDCG@10": mean(ndcg), "Recall@100": mean(recall)},
        "per_query": {q: {"NDCG@10": n, "Recall@100": r} for q, n, r in zip(QIDS, ndcg, recall)},
        "run_file": f"toy-{pair}-test-{system}.trec", "versions": {"beirx": "0.1.0"}, "timings_seconds": {},
        "efficiency": efficiency or {}, "extra": {},
    }
    if query_lang != corpus_lang:
        doc["query_dataset"] = {"name": "toy", "source": str(translated) if translated else "/data/toy-pl",
                                "language": query_lang, "query_language": query_lang, "split": "test",
                                "checksum": "sha256:plchecksum", "translated_from": "en"}
    return doc


def translated_folder(root: Path, per_query_similarity: bool = True) -> Path:
    """A translated dataset folder with a valid translation.json and quality/quality.json (no data files)."""
    folder = root / "toy-pl"
    manifest = translation_manifest(name="toy", src="en", tgt="pl", checksum="sha256:enchecksum",
                                    translator={"backend": "apertium", "model": "eng-pol", "revision": "r1"})
    manifest = dataclasses.replace(manifest, counts={"segments_total": 40, "segments_unique": 35, "characters": 1234},
                                   timings={"translate": 2.5}, cost={"estimated_usd": 0.5, "spent_usd": 0.25})
    manifest.save(TranslationManifest.path_in(folder))
    quality = quality_report(queries={"mean": mean(list(SIMILARITY.values())), "pairs": 4, "flagged_items": 0,
                                      "target_share": 1.0})
    quality = with_query_similarity(
        dataclasses.replace(quality, translated=dataclasses.replace(quality.translated, path=str(folder), lang="pl")),
        SIMILARITY if per_query_similarity else {})
    quality.save(folder / "quality" / "quality.json")
    return folder


def write_all(folder: Path, translated: Path | None = None, efficiency: dict | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for system, pair in SCORES:
        path = folder / f"toy-{pair}-test-{system}.json"
        eff = (efficiency or {}).get(system)
        path.write_text(json.dumps(document(system, pair, translated, eff)), encoding="utf-8")
        paths.append(path)
    return paths
