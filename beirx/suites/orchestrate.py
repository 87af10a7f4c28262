"""Build a suite end to end: subset -> (ranking check) -> translate -> quality -> publish, per dataset and
language, then the MTEB benchmark of the translations (and its results table).

Resumable: every finished step is recorded in ``OUTPUT/suite.json`` (:class:`beirx.artifacts.suite.SuiteState`)
with a fingerprint of what it was run from and the checksum of what it wrote. A rerun skips a step whose
fingerprint matches and whose output still has the recorded checksum, and runs the others; an interrupted
translation resumes from its translation memory, so a build killed at any point and rerun gives the outputs
of a build never interrupted. Changing a section of the suite file reruns the steps that depend on it.

Layout of ``OUTPUT``::

    suite.json                      the build's state
    subsets/<name>/                 each dataset's subset (subset.json; ranking-check/ with --check systems)
    translated/<name>-<lang>/       each translation (translation.json, quality/)
    publish/<name>-<lang>/          each translation in the Hub/MTEB layout (pushed when [publish] repo is set)
    mteb/                           one task file per translation, benchmark.py, results/ and results.md
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beirx.artifacts.quality import QualityReport
from beirx.artifacts.suite import SuiteState, SuiteStep
from beirx.data.dataset import BeirDataset
from beirx.data.front_matter import read_front_matter
from beirx.errors import BeirxError, DataError
from beirx.provenance import environment_versions
from beirx.suites.config import Suite, SuiteDataset

log = logging.getLogger(__name__)


def dataset_checksum(folder: Path) -> str | None:
    """The checksum of the BEIR folder ``folder``, None when it is not one (any more)."""
    try:
        return BeirDataset(folder).checksum()
    except BeirxError:
        return None


def _file_checksum(path: Path) -> str | None:
    from beirx.checksums import corpus_checksum  # sha256 of one file

    return corpus_checksum(path) if path.is_file() else None


def _export_checksum(folder: Path) -> str | None:
    """The checksum of the dataset an export holds, from its card (None when there is no complete export)."""
    return (read_front_matter(folder / "README.md").get("beirx") or {}).get("checksum")


class SuiteBuilder:
    """Runs the steps of one suite, skipping those already done (see the module doc)."""

    def __init__(self, suite: Suite, show_progress: bool = True, use_cache: bool = True):
        self.suite, self.show_progress, self.use_cache = suite, show_progress, use_cache
        self.state_path = SuiteState.path_in(suite.output)
        state = SuiteState.load(self.state_path) if self.state_path.is_file() else None
        self.state = state or SuiteState(name=suite.name, config=str(suite.path))
        self.skipped: list[SuiteStep] = []
        self.ran: list[SuiteStep] = []

    # -- the one step runner ------------------------------------------------------------------------
    def step(self, step: str, dataset: str | None, language: str | None, inputs: str, output: Path,
             verify: Callable[[Path], str | None], work: Callable[[], dict[str, Any] | None]) -> SuiteStep:
        done = self.state.find(step, dataset, language)
        if done is not None and done.inputs == inputs and done.output == str(output) and \
                verify(output) == done.output_checksum:
            log.info("suite %s: %s %s%s done earlier; skipped", self.suite.name, step, dataset or "",
                     f" [{language}]" if language else "")
            self.skipped.append(done)
            return done
        log.info("suite %s: %s %s%s", self.suite.name, step, dataset or "", f" [{language}]" if language else "")
        started = time.time()
        details = work() or {}
        checksum = verify(output)
        if checksum is None:  # pragma: no cover - a step that wrote nothing is a bug
            raise BeirxError(f"suite step {step} wrote nothing at {output}")
        entry = SuiteStep(step=step, dataset=dataset, language=language, inputs=inputs, output=str(output),
                          output_checksum=checksum, seconds=round(time.time() - started, 3), details=details)
        self.state.record(entry)
        self.state.name, self.state.versions = self.suite.name, environment_versions()
        self.state.save(self.state_path)
        self.ran.append(entry)
        return entry

    # -- the whole suite -------------------------------------------------------------------------------
    def build(self) -> SuiteState:
        from beirx.data.resolve import resolve_dataset

        suite = self.suite
        sources = [(entry, resolve_dataset(entry.spec, lang=suite.source_language)) for entry in suite.datasets]
        names = [source.name for _, source in sources]
        if len(set(names)) != len(names):
            raise BeirxError(f"{suite.path}: two datasets share the name {max(names, key=names.count)!r}")
        translated: list[tuple[BeirDataset, SuiteStep]] = []
        for entry, source in sources:
            base = self.subset(entry, source) if suite.subset is not None else source
            if suite.subset is not None and suite.subset.check:
                self.check(entry, source, base)
            for lang in entry.languages:
                target = self.translate(entry, base, lang)
                quality = self.quality(entry, base, target, lang)
                translated.append((target, self.publish(entry, target, lang, quality)))
        self.benchmark(translated)
        return self.state

    def subset(self, entry: SuiteDataset, source: BeirDataset) -> BeirDataset:
        from beirx.subsets.cut import make_subset
        from beirx.subsets.system_args import parse_pool

        recipe = self.suite.subset
        output = self.suite.output / "subsets" / source.name

        def work():
            manifest = make_subset(source, output, queries=recipe.queries, pool=parse_pool(recipe.pool),
                                   depth=recipe.depth, max_docs=recipe.max_docs, seed=recipe.seed,
                                   stratify=bool(recipe.stratify), split=entry.split,
                                   show_progress=self.show_progress, use_cache=self.use_cache)
            counts = manifest.counts
            return {"queries": counts.queries, "documents": counts.documents,
                    "depth_reached": manifest.method.depth_reached,
                    "characters_share": round(counts.characters / counts.source_characters, 6)}

        self.step("subset", entry.spec, None, self.suite.fingerprint("subset", source.checksum(), entry.split), output,
                  dataset_checksum, work)
        return BeirDataset(output, lang=source.lang)

    def check(self, entry: SuiteDataset, source: BeirDataset, subset: BeirDataset) -> None:
        from beirx.artifacts.subset import SubsetManifest
        from beirx.subsets.check import check_ranking
        from beirx.subsets.system_args import parse_systems

        recipe = self.suite.subset

        def verify(folder: Path) -> str | None:
            manifest = SubsetManifest.load_optional(SubsetManifest.path_in(folder))
            check = manifest.ranking_check if manifest else None
            return check.subset_checksum if check else None

        def work():
            check = check_ranking(source, subset, parse_systems(recipe.check), subset.root / "ranking-check",
                                  threshold=recipe.tau_threshold, show_progress=self.show_progress,
                                  use_cache=self.use_cache)
            resolved, power = check.subset_resolution, check.discriminative_power
            return {"tau": check.tau, "tau_interval": check.tau_interval, "rho": check.rho,
                    "resolution": resolved.smallest_separated if resolved else None, "reading": check.reading,
                    "not_pooled": [s.label for s in check.systems if s.pooled is False], "warning": check.warning,
                    "discriminative_power_retained": power.retained if power else None,
                    "expected_pool_bias": check.pool_bias.expected if check.pool_bias else None}

        self.step("check", entry.spec, None, self.suite.fingerprint("subset", subset.checksum()), subset.root,
                  verify, work)

    def translate(self, entry: SuiteDataset, base: BeirDataset, lang: str) -> BeirDataset:
        from beirx.data.cache import cache_dir
        from beirx.translate.backends import TRANSLATORS
        from beirx.translate.pipeline import translate_dataset
        from beirx.translate.planning import budget
        from beirx.translate.planning.subset_cost import share_of_full
        from beirx.translate.translation_memory import TranslationMemory

        settings = self.suite.translate
        backend = TRANSLATORS.get(settings.translator)
        translator = backend(self.suite.source_language, lang, settings.model, **backend.read_options(settings.options))
        output = self.suite.output / "translated" / f"{base.root.name}-{lang}"
        memory_path = self.suite.output / settings.memory if settings.memory else \
            cache_dir("translation_memory") / "memory.sqlite"
        fields = tuple(settings.fields)
        suite_path = self.suite.path

        def work():
            translator.check_ready()
            with TranslationMemory(memory_path) as memory:
                paid = budget.paid_run(
                    base, translator, memory, settings.max_cost, lambda said: log.info("%s: %s", base.name, said),
                    lambda cost: f"{suite_path}: {translator.name} is a paid service: set max_cost (USD, per "
                                 f"translation) in [translate] (estimate for {base.name}: USD "
                                 f"{cost.estimated_usd:.2f})",
                    fields=fields)
                manifest = translate_dataset(base, output, translator, memory, fields=fields,
                                             batch_size=settings.batch_size, progress=self.show_progress)
                if paid:
                    manifest = paid.record(manifest, translator, output)
                counts = manifest.counts
                details = {k: counts[k] for k in ("characters", "segments_unique", "from_memory", "translated")}
                if settings.cost:
                    share = share_of_full(base, translator, memory, fields=fields)
                    details["share_of_full"] = share["share_of_full"] if share else None
                    if paid:
                        details["estimated_usd"] = paid.estimated_usd
            return details

        with translator:
            inputs = self.suite.fingerprint("translate", base.checksum(), lang, translator.describe())
            self.step("translate", entry.spec, lang, inputs, output, dataset_checksum, work)
        return BeirDataset(output, lang=lang)

    def quality(self, entry: SuiteDataset, base: BeirDataset, target: BeirDataset, lang: str) -> str:
        """Run the quality steps; returns the checksum that stands for their result."""
        steps = self.suite.quality_steps
        settings = self.suite.quality
        report = "report" in steps
        output = QualityReport.path_in(target.root) if report else target.root

        def verify(path: Path) -> str | None:
            if not report:
                return dataset_checksum(path)
            if not path.is_file():
                return None
            try:  # a damaged report or sidecar is no result: the step runs again
                return QualityReport.load_verified(path).translated.checksum
            except DataError as exc:
                log.warning("%s; the quality step runs again", exc)
                return None

        def work():
            details: dict[str, Any] = {}
            if "validate" in steps:
                from beirx.data.validate import validate_dataset

                checked = validate_dataset(target.root, against=base.root)
                if not checked.ok:
                    raise BeirxError(f"{target.root} does not keep the IDs and qrels of {base.root}: "
                                     + "; ".join(str(e) for e in checked.errors[:5]))
                details["validate"] = "IDs and qrels identical"
            if report:
                from beirx.translate.quality import run_quality

                run_quality(base, target, encoder=settings.encoder, src_lang=self.suite.source_language,
                            tgt_lang=lang, max_items=settings.max_items, show_progress=self.show_progress,
                            use_cache=self.use_cache)  # the stage's public entry point
                details["report"] = str(QualityReport.path_in(target.root))
            return details

        if steps:
            self.step("quality", entry.spec, lang, self.suite.fingerprint("quality", target.checksum(), steps),
                      output, verify, work)
        return verify(output) or ""

    def publish(self, entry: SuiteDataset, target: BeirDataset, lang: str, quality: str) -> SuiteStep:
        from beirx.publish.hub import export_dataset, push_folder

        settings = self.suite.publish
        output = self.suite.output / "publish" / target.root.name
        repo = settings.repo.format(dataset=target.name, lang=lang) if settings.repo else None

        def work():
            export_dataset(target, output, repo_id=repo)
            if repo:
                push_folder(output, repo, private=bool(settings.private),
                            commit_message=f"beirx suite {self.suite.name}: {target.name} ({lang})")
            return {"repo": repo, "pushed": bool(repo)}

        return self.step("publish", entry.spec, lang, self.suite.fingerprint("publish", target.checksum(), quality),
                         output, _export_checksum, work)

    def benchmark(self, translated: list[tuple[BeirDataset, SuiteStep]]) -> None:
        from beirx.publish.mteb_benchmark import (BENCHMARK_FILE, RESULTS_TABLE, evaluate_benchmark, load_benchmark,
                                                  write_benchmark, write_results_table)

        suite, settings = self.suite, self.suite.mteb
        folder = suite.output / "mteb"
        hub = {}
        for target, published in translated:
            if published.details.get("pushed"):
                from beirx.publish.mteb_task import hub_revision

                hub[str(target.root)] = (published.details["repo"], hub_revision(published.details["repo"]))

        def work():
            write_benchmark([t for t, _ in translated], folder, name=suite.name, description=suite.description,
                            reference=suite.reference, contacts=suite.contacts, hub=hub,
                            export_dirs={str(t.root): Path(p.output) for t, p in translated})
            models = settings.evaluate
            if models:
                bench = load_benchmark(folder)
                for model in models:
                    evaluate_benchmark(bench, model, folder / "results", settings.batch_size)
                write_results_table(bench, folder / "results", folder / RESULTS_TABLE)
            return {"tasks": len(translated), "models": models}

        inputs = suite.fingerprint("mteb", suite.name, suite.description, suite.reference, suite.contacts,
                                   [t.checksum() for t, _ in translated], sorted(hub.items()))
        self.step("benchmark", None, None, inputs, folder / BENCHMARK_FILE, _file_checksum, work)


def build_suite(suite: Suite, show_progress: bool = True, use_cache: bool = True) -> SuiteBuilder:
    """Build ``suite`` (see the module doc); the builder knows what ran and what was skipped."""
    builder = SuiteBuilder(suite, show_progress, use_cache)
    builder.build()
    return builder
