"""translate/ is laid out as its pipeline, and a module name means one thing across the package.

Someone who opens ``beirx/translate/`` should see the steps a translation goes through in order (planning,
execution, output) with the request runner and the memory they share beside them, find every executor in one
place, and never meet two modules of one name that mean different things (``memory`` was both GPU memory in
``train/`` and the translation memory).
"""

from __future__ import annotations

from collections import defaultdict

from conftest import REPO
from test_layering import _module_graph

TRANSLATE = REPO / "beirx" / "translate"

#: Module names used in more than one package, and why each use is the same concept at another layer.
SAME_CONCEPT = {
    "base": "the interface of each registry: artifacts, retrievers, rerankers, translators, quality methods",
    "bi_encoder": "a bi-encoder: trained in train/, scoring pairs in evaluate/rerankers/",
    "cross_encoder": "a cross-encoder: trained in train/, scoring pairs in evaluate/rerankers/",
    "efficiency": "the efficiency figures: their artifact (artifacts/) and their report section (report/)",
    "errors": "beirx's error types, and the command line's one boundary that turns them into exit code 2",
    "options": "typed options: the declaration record (beirx/options.py) and the records of train/ and report/",
    "quality": "the quality report: its artifact and the command that writes it",
    "review": "the human review: its artifact and its command",
    "runner": "a stage's one path from a typed request to its result (evaluate/, translate/)",
    "splade": "SPLADE: the loaded model (models/) and the retriever built on it (evaluate/retrievers/)",
    "subset": "a subset: its artifact and its command",
    "suite": "a suite: its artifact and its command",
    "validate": "dataset validation: the check (data/) and its command (cli/)",
}


def test_translate_shows_its_pipeline():
    """The runner, the pipeline and the memory every step shares; a package per step; backends, the LLM task
    and quality estimation beside them."""
    modules = sorted(p.stem for p in TRANSLATE.glob("*.py"))
    packages = sorted(p.name for p in TRANSLATE.iterdir() if (p / "__init__.py").is_file())
    assert modules == ["__init__", "pipeline", "runner", "translation_memory"]
    assert packages == ["backends", "execution", "llm", "output", "planning", "quality"]


def test_every_executor_is_in_execution():
    executors = {}
    for path in TRANSLATE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if line.startswith("class ") and line.split("(")[0].split(":")[0].endswith("Executor"):
                executors[line.split()[1].split("(")[0].rstrip(":")] = path.relative_to(TRANSLATE).parts[0]
    assert {"LocalExecutor", "StreamingExecutor", "RayExecutor", "BatchExecutor"} <= executors.keys()
    assert set(executors.values()) == {"execution"}


def test_only_the_backends_enter_the_llm_task():
    """The pipeline reaches LLM translation only through a backend, i.e. the :class:`Translator` interface: no
    other module imports the LLM subpackage, not even inside a function."""
    llm = "beirx.translate.llm"
    allowed = (llm + ".", "beirx.translate.backends.")
    entering = {module: sorted(m for m in imports if m == llm or m.startswith(llm + "."))
                for module, imports in _module_graph().items() if not module.startswith(allowed)}
    assert {module: found for module, found in entering.items() if found} == {}


def test_a_module_name_means_one_thing():
    by_name = defaultdict(list)
    for path in (REPO / "beirx").rglob("*.py"):
        if not path.name.startswith("__"):
            by_name[path.stem].append(str(path.relative_to(REPO)))
    repeated = {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}
    assert {name: paths for name, paths in repeated.items() if name not in SAME_CONCEPT} == {}
