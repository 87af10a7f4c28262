"""Run one ``beirx translate`` request: the single path from a typed request to a translated dataset.

It orchestrates only, as :mod:`beirx.evaluate.runner` does for evaluation: the backend comes from the
registry (:data:`~beirx.translate.backends.TRANSLATORS`), who translates the batches from
:func:`executor_for` (this process, Ray replicas or the Batch API), what a paid run may spend from
:func:`beirx.translate.planning.budget.paid_run`, the segments, memory and files from :mod:`beirx.translate.pipeline`,
and the quality report from :mod:`beirx.translate.quality`. The command parses flags into a
:class:`TranslateRequest` and prints the :class:`TranslateResult`.

Order matters for a user's money and time: the backend, its options and its credential are checked before
any download or segmenting; a paid run's estimate is checked against its cap before anything is sent.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beirx.artifacts.manifest import TranslationManifest
from beirx.errors import BeirxError
from beirx.translate import pipeline
from beirx.translate.backends import TRANSLATORS
from beirx.translate.backends.base import Translator
from beirx.translate.planning import budget
from beirx.translate.quality.pair_encoder import DEFAULT_ENCODER

log = logging.getLogger(__name__)


@dataclass
class TranslateRequest:
    """Everything one translation run needs (``beirx translate``'s flags, parsed)."""

    dataset: str
    """BEIR folder, catalogue name or hf:ORG/NAME."""
    lang: str
    src: str = "en"
    translator: str = "hf"
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """The backend's options, as given: its own flags and ``--translator-option`` pairs, by option name (read by
    the backend's declared options before it is built, :meth:`Translator.read_options`)."""
    fields: tuple[str, ...] = pipeline.FIELDS
    limit: int | None = None
    batch_size: int | None = None
    output: Path | None = None
    memory: Path | None = None
    verbatim: str = "auto"
    verbatim_kinds: tuple[str, ...] | None = None
    max_segment_tokens: int | None = None
    dry_run: bool = False
    shard: str | None = None
    """``I/N``: translate one shard's batches into its own memory file, write no dataset."""
    assemble: int | None = None
    """Merge the memories of shards 1..N (0: N from the files) and write the dataset."""
    executor: str = "local"
    ray_address: str | None = None
    workers: int = 2
    gpus_per_worker: float = 0.0
    max_cost: float | None = None
    batch: bool = False
    batch_poll: float | None = None
    """Seconds between two looks at a batch in flight (default: the Batch executor's)."""
    quality: bool = True
    quality_encoder: str = DEFAULT_ENCODER
    quality_max_items: int | None = None
    progress: bool = True

    def segmenting(self) -> dict[str, Any]:
        """The pipeline's keyword arguments that decide the segments (the same for dry runs, shards, runs)."""
        return {"fields": tuple(self.fields), "limit": self.limit, "verbatim": self.verbatim,
                "verbatim_kinds": self.verbatim_kinds, "max_segment_tokens": self.max_segment_tokens}

    def memory_path(self) -> Path:
        from beirx.data.cache import cache_dir

        return self.memory or cache_dir("translation_memory") / "memory.sqlite"


@dataclass
class TranslateResult:
    """What a run did: exactly one of ``dry_run``, ``shard`` and ``manifest`` is set."""

    dry_run: dict[str, Any] | None = None
    """What would be sent (:func:`beirx.translate.pipeline.dry_run`, with the share of the full dataset)."""
    shard: dict[str, Any] | None = None
    """What a ``--shard`` run did (:func:`beirx.translate.pipeline.translate_shard`)."""
    manifest: TranslationManifest | None = None
    output: Path | None = None
    quality_report: Path | None = None
    """The quality report's folder; None when skipped or when it failed (the translation stands)."""


def open_translator(request: TranslateRequest) -> Translator:
    """The request's backend with its options (``--max-cost`` too, for a backend that enforces it itself)."""
    translator_class = TRANSLATORS.get(request.translator)
    return translator_class(request.src, request.lang, request.model, **backend_options(request, translator_class))


def backend_options(request: TranslateRequest, translator_class: type[Translator]) -> dict[str, Any]:
    """The backend's options: ``--max-cost`` for one that declares a ``max_cost`` option (an LLM backend stops
    itself before crossing it), then the request's own (a ``--translator-option`` wins)."""
    own_cap = request.max_cost is not None and "max_cost" in translator_class.declared_options()
    return translator_class.read_options({**({"max_cost": request.max_cost} if own_cap else {}), **request.options})


def run_translation(request: TranslateRequest, say: Callable[[str], None] = log.info) -> TranslateResult:
    """Run ``request``; ``say`` receives what the user must see before the work (a paid run's estimate)."""
    if request.lang == request.src:
        raise BeirxError(f"--lang and --src are both {request.lang!r}")
    if request.shard and request.assemble is not None:
        raise BeirxError("--shard and --assemble are two steps: run the shards first, then --assemble")
    # Backend, options and credential first: a typo or a missing key fails before any download or segmenting.
    translator = open_translator(request)
    with translator:  # its connections and threads are released however the run ends
        if not request.dry_run:
            translator.check_ready()
        from beirx.data.resolve import resolve_dataset

        dataset = resolve_dataset(request.dataset, lang=request.src)
        if request.dry_run:
            return TranslateResult(dry_run=_dry_run(request, dataset, translator))
        if request.shard:
            budget.require_cap(translator, request.max_cost)
        with executor_for(request, translator) as executor:
            if request.shard:
                return TranslateResult(shard=_translate_shard(request, dataset, translator, executor))
            result = _translate(request, dataset, translator, executor, say)
    if request.quality:
        result.quality_report = quality_stage(request, dataset, result.output)
    return result


def _dry_run(request: TranslateRequest, dataset, translator: Translator) -> dict[str, Any]:
    from beirx.translate.planning.subset_cost import share_of_full
    from beirx.translate.translation_memory import TranslationMemory

    common = request.segmenting()
    with TranslationMemory(request.memory_path()) as memory:
        summary = pipeline.dry_run(dataset, translator, memory, **common)
        summary.update(share_of_full(dataset, translator, memory, summary, **common) or {})
    return summary


def _translate_shard(request: TranslateRequest, dataset, translator: Translator, executor) -> dict[str, Any]:
    from beirx.translate.execution.shards import Shard
    from beirx.translate.translation_memory import TranslationMemory

    shard = Shard.parse(request.shard)
    with TranslationMemory(shard.memory_path(request.memory_path())) as memory:
        return pipeline.translate_shard(dataset, translator, memory, shard, batch_size=request.batch_size,
                                        progress=request.progress, executor=executor, **request.segmenting())


def _translate(request: TranslateRequest, dataset, translator: Translator, executor,
               say: Callable[[str], None]) -> TranslateResult:
    from beirx.data.cache import dataset_dir
    from beirx.translate.execution.shards import shard_count
    from beirx.translate.translation_memory import TranslationMemory

    memory_path = request.memory_path()
    assemble = (request.assemble or shard_count(memory_path)) if request.assemble is not None else None
    name = dataset.name if request.limit is None else f"{dataset.name}-limit{request.limit}"
    output = request.output or dataset_dir(name, request.lang)
    common = request.segmenting()
    with TranslationMemory(memory_path) as memory:
        paid = budget.paid_run(dataset, translator, memory, request.max_cost, say, **common)
        manifest = pipeline.translate_dataset(dataset, output, translator, memory, batch_size=request.batch_size,
                                              progress=request.progress, executor=executor, assemble=assemble,
                                              **common)
    if paid:
        manifest = paid.record(manifest, translator, output)
    return TranslateResult(manifest=manifest, output=output)


@contextlib.contextmanager
def executor_for(request: TranslateRequest, translator: Translator) -> Iterator[Any]:
    """This process, or translator replicas on Ray built from the same request, or a provider's Batch API
    (``--batch``)."""
    from beirx.translate.execution.executors import make_executor

    if request.batch:
        if request.executor != "local" or not translator.supports_batch_api:
            raise BeirxError("--batch needs --translator openai and the local executor")
        from beirx.translate.execution.openai_batch import BatchExecutor
        from beirx.translate.translation_memory import system_key

        shard = f"-shard-{request.shard.replace('/', '-of-')}" if request.shard else ""
        state = request.memory_path().parent / "batches" / \
            f"{system_key(translator.describe(), request.src, request.lang)}{shard}.json"
        yield BatchExecutor(translator, state, **({"poll_seconds": request.batch_poll} if request.batch_poll else {}))
        return
    if request.executor == "local":
        yield make_executor("local", translator)
        return
    translator_class = type(translator)
    # replicas share one endpoint's budgets (requests in flight, cost): the backend divides them
    options = translator.for_replicas(backend_options(request, translator_class), request.workers)
    factory = functools.partial(translator_class, request.src, request.lang, request.model, **options)
    executor = make_executor("ray", translator, factory, workers=request.workers, address=request.ray_address,
                             gpus_per_worker=request.gpus_per_worker)
    try:
        yield executor
    finally:
        executor.close()


def quality_stage(request: TranslateRequest, source, output: Path) -> Path | None:
    """Run the quality stage on the written dataset; a failure there never undoes the translation (it is
    logged, with the command that scores the translation later). Returns the report's folder."""
    from beirx.data.dataset import BeirDataset
    from beirx.network import HubUnavailable

    try:
        from beirx.translate.quality import report_dir, run_quality

        translated = BeirDataset(output, name=source.name, lang=request.lang)
        run_quality(source, translated, encoder=request.quality_encoder, src_lang=request.src,
                    tgt_lang=request.lang, fields=tuple(f for f in ("queries", "corpus") if f in request.fields),
                    show_progress=request.progress, max_items=request.quality_max_items)
    except (BeirxError, OSError, ImportError) as exc:
        later = f"beirx quality {output} --source {source.root} --lang {request.lang} --encoder DIR"
        if isinstance(exc, HubUnavailable) and request.quality_encoder in exc.what:
            log.warning("quality report not written: the encoder %s is not in the local Hugging Face cache and the "
                        "Hub cannot be reached (%s); pass --quality-encoder DIR (a local multilingual "
                        "sentence-transformers folder) or --no-quality. The translation is complete; score it with  %s",
                        request.quality_encoder, exc.cause, later)
        else:
            log.warning("quality report not written (%s). The translation is complete; score it with  %s", exc, later)
        return None
    return report_dir(translated)
