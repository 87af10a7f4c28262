"""Layering: stages import only earlier stages and shared layers; the models/ layer gives one revision, one
device rule and one cache of loaded models.

Import checks run in a fresh interpreter, so nothing imported by other tests can hide a violation.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from beirx.errors import BeirxError
from conftest import REPO
from extras import needs

# Walks a package and imports every module; a module whose optional dependency is absent is skipped (it
# cannot be imported in any environment without that extra, so it cannot leak either).
_WALK = """
import importlib, json, pkgutil, sys
packages = {packages!r}
walked, skipped = [], []
for name in packages:
    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        try:
            importlib.import_module(info.name)
            walked.append(info.name)
        except ImportError as exc:
            skipped.append([info.name, str(exc)])
print(json.dumps({{"modules": sorted(sys.modules), "walked": walked, "skipped": skipped}}))
"""


def _fresh_import(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _walk(*packages: str) -> dict:
    return _fresh_import(_WALK.format(packages=list(packages)))


def _under(modules: list[str], package: str) -> list[str]:
    return [m for m in modules if m == package or m.startswith(package + ".")]


def _imports_in_source(package: str) -> dict[str, set[str]]:
    """Every ``beirx`` module each source file of ``package`` imports, at module level or inside functions."""
    found = {}
    for path in sorted((REPO / package.replace(".", "/")).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(REPO))] = {n for n in names if n.startswith("beirx")}
    return found


def test_translate_and_publish_never_import_evaluate():
    for package in ("beirx.translate", "beirx.publish"):
        result = _walk(package)
        assert len(result["walked"]) >= 4 and set(result["walked"]) <= set(result["modules"])
        assert not result["skipped"], result["skipped"]  # everything is installed here: nothing hidden
        assert _under(result["modules"], "beirx.evaluate") == [], package
        lazy = {f: sorted(n for n in names if n.startswith("beirx.evaluate"))
                for f, names in _imports_in_source(package).items()}
        assert {f: n for f, n in lazy.items() if n} == {}, package  # not even inside a function


def test_publish_reads_translation_facts_only_through_artifacts():
    """Publish states what the translate stage measured (card figures, verification) from the typed artifacts in
    beirx/artifacts, never from translate's code, not even inside a function."""
    found = {f: sorted(n for n in names if n.startswith("beirx.translate"))
             for f, names in _imports_in_source("beirx.publish").items()}
    assert {f: n for f, n in found.items() if n} == {}


def test_review_reads_earlier_stages_only_through_artifacts():
    """The review stage (after translate) uses data, artifacts and shared modules; no stage imports it."""
    result = _walk("beirx.review")
    assert {"beirx.review.app", "beirx.review.sample", "beirx.review.export"} <= set(result["walked"])
    assert not result["skipped"], result["skipped"]
    stages = ("beirx.translate", "beirx.evaluate", "beirx.report", "beirx.publish", "beirx.train")
    assert [m for m in result["modules"] if m.startswith(stages)] == []
    lazy = {f: sorted(n for n in names if n.startswith(stages)) for f, names in _imports_in_source("beirx.review").items()}
    assert {f: n for f, n in lazy.items() if n} == {}
    for package in stages:
        users = {f: n for f, n in _imports_in_source(package).items() if any(m.startswith("beirx.review") for m in n)}
        assert users == {}, package


def test_data_never_imports_publish_or_later_stages():
    result = _walk("beirx.data")
    assert "beirx.data.hub_source" in result["walked"]
    later = ("beirx.publish", "beirx.evaluate", "beirx.translate", "beirx.models", "beirx.review")
    assert [m for m in result["modules"] if m.startswith(later)] == []
    lazy = {f: sorted(n for n in names if n.startswith(later)) for f, names in _imports_in_source("beirx.data").items()}
    assert {f: n for f, n in lazy.items() if n} == {}


def test_models_layer_imports_no_stage():
    result = _walk("beirx.models")
    assert "beirx.models.embeddings_cache" in result["walked"]
    stages = ("beirx.publish", "beirx.evaluate", "beirx.translate", "beirx.review")
    assert [m for m in result["modules"] if m.startswith(stages)] == []
    lazy = {f: sorted(n for n in names if n.startswith(stages)) for f, names in _imports_in_source("beirx.models").items()}
    assert {f: n for f, n in lazy.items() if n} == {}


def _module_graph() -> dict[str, set[str]]:
    """``{module: the beirx modules it imports}``, imports inside functions included."""
    files = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (REPO / "beirx").rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # "from . import x" inside a package
                    base = ".".join(filter(None, [package, base]))
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = (found & files.keys()) - {name}
    return graph


def test_no_import_cycles_between_modules():
    """Not even through an import inside a function (translate's executors and ray_executor were one)."""
    graph = _module_graph()
    assert {"beirx.translate.execution.work", "beirx.evaluate.stages"} <= graph.keys()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            current = todo.pop()
            if current == goal:
                return True
            if current not in seen:
                seen.add(current)
                todo.extend(graph[current])
        return False

    assert sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if reaches(b, a)}) == []


def test_subsets_is_a_stage_after_evaluate_and_suites_sit_above_the_stages():
    """subsets may use evaluate (pooling, the ranking check) but no later stage; no stage imports subsets or suites
    (suites orchestrate the stages; only the CLI imports suites)."""
    result = _walk("beirx.subsets")
    assert {"beirx.subsets.cut", "beirx.subsets.check"} <= set(result["walked"]) and not result["skipped"]
    later = ("beirx.translate", "beirx.publish", "beirx.report", "beirx.suites", "beirx.cli", "beirx.train")
    assert [m for m in result["modules"] if m.startswith(later)] == []
    lazy = {f: sorted(n for n in names if n.startswith(later))
            for f, names in _imports_in_source("beirx.subsets").items()}
    assert {f: n for f, n in lazy.items() if n} == {}
    for package in ("beirx.data", "beirx.models", "beirx.artifacts", "beirx.evaluate", "beirx.translate",
                    "beirx.publish", "beirx.report", "beirx.train", "beirx.subsets"):
        above = ("beirx.suites", "beirx.cli") + (() if package == "beirx.subsets" else ("beirx.subsets",))
        found = {f: sorted(n for n in names if n.startswith(above)) for f, names in _imports_in_source(package).items()}
        assert {f: n for f, n in found.items() if n} == {}, package
    suites = set().union(*_imports_in_source("beirx.suites").values())
    assert not {n for n in suites if n.startswith("beirx.cli")}
    assert {"beirx.subsets.cut", "beirx.translate.pipeline", "beirx.publish.mteb_benchmark"} <= suites


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["translate", "--help"], ["subset", "--help"],
                                  ["suite", "--help"]])
def test_help_imports_no_heavy_library(argv):
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['beirx', *{argv!r}]\n"
            "try:\n    runpy.run_module('beirx', run_name='__main__')\n"
            "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
            "print(json.dumps({'modules': sorted(sys.modules)}))")
    modules = set(_fresh_import(code)["modules"])
    assert not modules & {"torch", "transformers", "sentence_transformers"}


def test_models_package_import_is_light():
    modules = set(_fresh_import("import json, sys, beirx.models; print(json.dumps({'modules': sorted(sys.modules)}))")
                  ["modules"])
    assert not modules & {"torch", "transformers", "sentence_transformers", "numpy", "huggingface_hub"}


# -- one revision ----------------------------------------------------------------------------------------
class Pack:
    code = "en"


def test_same_sentence_transformers_folder_same_revision_in_dense_and_quality(e5_small):
    needs("sentence_transformers", "neural")
    from beirx.evaluate.retrievers.dense import DenseRetriever
    from beirx.models.files import folder_checksum, model_revision
    from beirx.translate.quality.pair_encoder import PairEncoder

    dense = DenseRetriever(Pack(), model=str(e5_small), show_progress=False).describe()["revision"]
    quality = PairEncoder(str(e5_small), show_progress=False).describe()["revision"]
    assert dense == quality == model_revision(str(e5_small)) == folder_checksum(e5_small)
    assert dense.startswith("sha256:") and len(dense) == len("sha256:") + 64


@pytest.fixture(scope="module")
def tiny_marian_folder(tmp_path_factory):
    """A random-weight Marian model with a word-level vocabulary (enough for an identity check)."""
    needs("sentencepiece", "translate")
    needs("transformers", "neural")
    needs("torch", "neural")
    from tiny_models import build_tiny_marian

    work = tmp_path_factory.mktemp("marian")
    folder = build_tiny_marian(work, [f"the cat {w} the dog" for w in "abcdefghij" * 30], vocab_size=16, max_length=16)
    (folder / "README.md").write_text("a model card", encoding="utf-8")
    return folder


def test_same_translation_folder_same_revision_in_results_and_manifest(tiny_marian_folder):
    """A results document records the revision of resolve_model (dense retrieval, rerankers: a seq2seq folder is
    refused as a dense model, so its revision is taken from the function they call); a manifest records the
    translator's."""
    needs("sentence_transformers", "neural")
    from beirx.errors import BeirxError
    from beirx.evaluate.retrievers.dense import DenseRetriever
    from beirx.models.files import resolve_model
    from beirx.translate.backends.hf import HFTranslator

    translator = HFTranslator("en", "es", str(tiny_marian_folder), beam_size=1, device="cpu")
    assert translator.describe()["revision"] == resolve_model(str(tiny_marian_folder)).revision
    with pytest.raises(BeirxError, match="a sequence-to-sequence model .MarianMTModel., not a sentence embedding"):
        DenseRetriever(Pack(), model=str(tiny_marian_folder), show_progress=False)
    before = translator.describe()["revision"]
    (tiny_marian_folder / "README.md").write_text("edited card", encoding="utf-8")  # not the weights
    assert HFTranslator("en", "es", str(tiny_marian_folder), beam_size=1).describe()["revision"] == before


def test_ctranslate2_records_the_source_folder_revision(tiny_marian_folder):
    needs("ctranslate2", "translate")
    from beirx.models.files import model_revision
    from beirx.translate.backends.ctranslate2 import CT2Translator

    ct2 = CT2Translator("en", "es", str(tiny_marian_folder), beam_size=1, device="cpu")
    assert ct2.describe()["revision"] == model_revision(str(tiny_marian_folder))


# -- one device rule ---------------------------------------------------------------------------------------
def test_device_choice():
    from beirx.models.device import choose_device

    assert choose_device(None, cuda_available=lambda: False) == "cpu"
    assert choose_device("auto", cuda_available=lambda: True) == "cuda"
    assert choose_device("CPU", cuda_available=lambda: True) == "cpu"
    assert choose_device("cuda:1", cuda_available=lambda: True) == "cuda:1"
    with pytest.raises(BeirxError, match="invalid device 'gpu0'.*cpu, cuda"):
        choose_device("gpu0")
    with pytest.raises(BeirxError, match="'cuda' requested but CUDA is not available"):
        choose_device("cuda", cuda_available=lambda: False)


def test_backends_validate_the_device_before_loading(tiny_marian_folder, e5_small):
    from beirx.evaluate.rerankers.inference import torch_device
    from beirx.evaluate.retrievers.dense import DenseRetriever
    from beirx.translate.backends.hf import HFTranslator

    torch = needs("torch", "neural")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert torch_device(None) == torch.device(expected)
    assert HFTranslator("en", "es", str(tiny_marian_folder), beam_size=1).device == expected
    for build in (lambda: torch_device("tpu"),
                  lambda: HFTranslator("en", "es", str(tiny_marian_folder), device="tpu"),
                  lambda: DenseRetriever(Pack(), model=str(e5_small), device="tpu")):
        with pytest.raises(BeirxError, match="invalid device 'tpu'"):
            build()


# -- one cache of loaded models ----------------------------------------------------------------------------
def test_loaded_model_cache_loads_once_per_key():
    from beirx.models import loaded

    calls = []
    loaded.clear()
    first = loaded.cached(("kind", "folder", "cpu"), lambda: calls.append(1) or object())
    assert loaded.cached(("kind", "folder", "cpu"), lambda: calls.append(2) or object()) is first
    other = loaded.cached(("kind", "folder", "cuda"), lambda: calls.append(3) or object())
    assert other is not first and calls == [1, 3]
    loaded.clear()
    assert loaded.cached(("kind", "folder", "cpu"), lambda: calls.append(4) or object()) is not first
    assert calls == [1, 3, 4]
    loaded.clear()


def test_dense_and_quality_share_one_loaded_model(e5_small):
    needs("sentence_transformers", "neural")
    from beirx.evaluate.retrievers.dense import DenseRetriever
    from beirx.models import loaded
    from beirx.translate.quality.pair_encoder import PairEncoder

    loaded.clear()
    dense = DenseRetriever(Pack(), model=str(e5_small), show_progress=False)
    encoder = PairEncoder(str(e5_small), show_progress=False)
    if dense.precision != "float32":
        pytest.skip("on CUDA the dense retriever loads fp16 weights, a different entry")
    assert dense.model() is encoder._load()
    loaded.clear()


# -- a new stage plugs in whole: one module plus one registry line --------------------------------------------
def test_a_new_translator_is_one_module_plus_one_registry_line(tiny_dataset, tmp_path, monkeypatch, capsys):
    """tests/toy_translator.py declares its flag and its option; registering it is the only other change: the
    flag shows in ``beirx translate --help`` (in its own group), and it translates a dataset end to end."""
    from beirx.cli import main
    from beirx.translate.backends import TRANSLATORS

    monkeypatch.setitem(TRANSLATORS._entries, "toy", "toy_translator:ToyTranslator")
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps the help to the terminal
    assert main(["translate", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "toy (--translator toy):\n  --toy-prefix TOY_PREFIX" in help_text
    # listed with the registered backends (other test modules may have registered their own before it)
    assert help_text.count("\n  --toy-prefix") == 1 and ", toy (default hf)" in " ".join(help_text.split())
    # flags a base class declares come once, in one group naming every backend that takes them
    assert help_text.count("\n  --llm-base-url") == 1 and "\nLLM translators (openai, hf-llm):\n" in help_text
    out = tmp_path / "out"
    assert main(["translate", "--dataset", str(tiny_dataset), "--lang", "es", "--translator", "toy",
                 "--toy-prefix", "> ", "--output", str(out), "--memory", str(tmp_path / "tm.sqlite"), "--no-quality",
                 "--no-progress"]) == 0
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(d["_id"], d["title"], d["text"]) for d in corpus] == [
        ("d1", "> CATS", "> CATS ARE SMALL DOMESTIC ANIMALS THAT HUNT MICE."),
        ("d2", "> DOGS", "> DOGS ARE LOYAL ANIMALS AND GOOD COMPANIONS."),
        ("d3", "> MICE", "> MICE ARE SMALL RODENTS; CATS HUNT THEM AT NIGHT."),
        ("d4", "", "> WHALES ARE THE LARGEST ANIMALS IN THE OCEAN."),
        ("d5", "> BIRDS", "> BIRDS CAN FLY AND SING.")]
    queries = [json.loads(line)["text"] for line in (out / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert queries == ["> WHICH ANIMALS HUNT MICE", "> LARGEST OCEAN ANIMAL", "> LOYAL COMPANION DOG",
                       "> UNJUDGED QUERY"]
    assert (out / "qrels" / "test.tsv").read_bytes() == (tiny_dataset / "qrels" / "test.tsv").read_bytes()
    manifest = json.loads((out / "translation.json").read_text(encoding="utf-8"))
    assert manifest["translator"] == {"backend": "toy", "prefix": "> "}
    assert f"{out}: 5 documents, 4 queries translated en->es with toy" in capsys.readouterr().out


def test_a_new_pairwise_reranker_is_one_module_plus_one_registry_line(tiny_dataset, tmp_path, monkeypatch, capsys):
    """tests/toy_reranker.py declares its flags and scores pairs; registering it is the only other change:
    ``beirx eval --reranker toy`` reranks BM25's candidates with it."""
    from beirx.cli import main
    from beirx.evaluate.rerankers import RERANKERS
    from beirx.evaluate.runs import read_trec

    monkeypatch.setitem(RERANKERS._entries, "toy", "toy_reranker:ToyReranker")
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["eval", "--help"]) == 0
    assert "toy (--reranker toy):\n  --toy-boost WORD" in capsys.readouterr().out
    out = tmp_path / "runs"
    assert main(["eval", "--dataset", str(tiny_dataset), "--lang", "en", "--retriever", "bm25", "--fields", "flat",
                 "--reranker", "toy", "--reranker-model", "words", "--toy-boost", "whales", "--first-stage", "bm25",
                 "--output", str(out), "--no-progress"]) == 0
    [run_file] = [p for p in out.glob("*.trec") if "rerank_toy" in p.name]
    run = read_trec(run_file)
    # distinct query words in each BM25 candidate, + 10 for "whales" (d4); worked out by hand from TINY_CORPUS
    assert run["q1"] == {"d1": 3.0, "d3": 2.0, "d2": 1.0, "d4": 11.0}  # which animals hunt mice
    assert run["q2"] == {"d4": 12.0, "d1": 0.0, "d2": 0.0}  # largest, ocean (BM25 also matched "animals")
    assert run["q3"] == {"d2": 1.0}  # loyal ("dogs", "companions" match BM25's stems, not these words)
    results = json.loads(run_file.with_suffix(".json").read_text(encoding="utf-8"))
    assert results["system"]["description"]["reranker"] == {"reranker": "toy", "model": "words", "boost": "whales",
                                                            "boost_score": 10.0}
