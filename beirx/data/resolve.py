"""Turn what a user typed after ``--dataset`` into a :class:`BeirDataset`.

* a folder in BEIR layout: used as it is, named after the folder (a beirx translation after its source);
* ``hf:ORG/NAME``: loaded from the Hugging Face Hub (needs the ``hub`` extra);
* a catalogue name: for English the cached copy, downloaded and extracted on first use; for another
  language the translated copy in ``$BEIRX_HOME/datasets/<name>-<lang>``, which ``beirx translate``
  writes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from beirx.data import catalogue
from beirx.data.cache import cache_dir, dataset_dir
from beirx.data.catalogue import DatasetInfo
from beirx.data.dataset import BeirDataset
from beirx.data.extract import beir_layout_problems, is_complete
from beirx.errors import BeirxError, MissingExtraError
from beirx.path_problems import link_problem

log = logging.getLogger(__name__)


def resolve_dataset(spec: str, lang: str = "en", download: bool = True, base_url: str | None = None,
                    progress: bool | None = None) -> BeirDataset:
    """The dataset ``spec`` names, in language ``lang``; downloads a catalogue dataset when allowed."""
    spec = spec.strip()
    if spec.startswith("hf:"):
        return _from_hub(spec, lang)
    local = _local_folder(spec)
    if local is not None:
        return BeirDataset(local, lang=lang, source=str(local))  # named after its family (translation.json)
    _refuse_missing_folder(spec)
    info = catalogue.get(spec)
    if lang != "en":
        return _translated(info, lang)
    root = ensure_cached(info, base_url=base_url, progress=progress) if download else _cached_or_fail(info)
    return BeirDataset(root, name=info.name, lang="en", source=info.url(base_url) or str(root))


def _refuse_missing_folder(spec: str) -> None:
    """A :class:`BeirxError` when ``spec`` is written as a path (or is one) but no dataset folder is there
    (``data/scifact-pl``: a slash in what is no catalogue name, as ``cqadupstack/android`` is)."""
    key = spec.strip().lower()
    if spec.startswith(("/", ".", "~")) or os.path.lexists(os.path.expanduser(spec)) or \
            ("/" in key and key not in catalogue.names() and key not in catalogue.GROUPS):
        link = link_problem(spec)  # a symbolic link that loops or leads nowhere: say so
        raise BeirxError(f"dataset folder {spec} not found" + (f": {link}" if link else ""))


def ensure_cached(info: DatasetInfo, base_url: str | None = None, progress: bool | None = None) -> Path:
    """The cached folder of ``info``, downloading and extracting its archive first if needed."""
    from beirx.data.download import file_lock

    target = dataset_dir(info.name)
    if _usable(target):
        return target
    if not info.downloadable:
        raise BeirxError(f"{info.name} ({info.title}) is not publicly downloadable. To obtain it: {info.access}. "
                         f"Then put it in BEIR layout at {target} or pass its folder with --dataset.")
    with file_lock(cache_dir("downloads") / f"{info.archive}.lock"):
        if _usable(target):  # another process finished it while this one waited for the lock
            return target
        archive_dir = dataset_dir(info.archive)
        if archive_dir.exists():
            state = "is incomplete" if not is_complete(archive_dir) else f"has no {info.subdir!r} subset"
            raise BeirxError(f"{archive_dir} exists but {state} (missing {', '.join(beir_layout_problems(target))}); "
                             f"delete it to download {info.archive} again")
        _download_and_extract(info, base_url, progress)
    return target


def _usable(folder: Path) -> bool:
    return folder.is_dir() and not beir_layout_problems(folder)


def _download_and_extract(info: DatasetInfo, base_url: str | None, progress: bool | None) -> None:
    from beirx.data.download import download_file, file_digests
    from beirx.data.extract import safe_extract

    url = info.url(base_url)
    zip_path = cache_dir("downloads") / f"{info.archive}.zip"
    log.info("downloading %s from %s", info.archive, url)
    download_file(url, zip_path, md5=info.md5, sha256=info.sha256, progress=progress)
    subdirs = tuple(catalogue.get(n).subdir for n in catalogue.GROUPS.get(info.archive, []))
    provenance = {"url": url, **file_digests(zip_path)}
    safe_extract(zip_path, dataset_dir(info.archive), subdirs=subdirs, provenance=provenance, progress=progress)
    zip_path.unlink()  # the extracted folder is what is used; its marker records the archive's checksums


def _cached_or_fail(info: DatasetInfo) -> Path:
    target = dataset_dir(info.name)
    if _usable(target):
        return target
    raise BeirxError(f"{info.name} is not in the cache ({target}); fetch it with  beirx datasets --download {info.name}")


def _translated(info: DatasetInfo, lang: str) -> BeirDataset:
    folder = dataset_dir(info.name, lang)
    if folder.is_dir():
        missing = beir_layout_problems(folder)
        if missing:
            raise BeirxError(f"{folder} is incomplete (missing {', '.join(missing)}); finish it with  "
                             f"beirx translate --dataset {info.name} --lang {lang}")
        return BeirDataset(folder, name=info.name, lang=lang, source=str(folder))
    hint = f"  beirx translate --dataset {info.name} --lang {lang}"
    if lang == "pl" and info.beir_pl_id:
        hint += f"\nor use the published BEIR-PL version:  --dataset hf:{info.beir_pl_id}"
    raise BeirxError(f"no {lang} version of {info.name} in the cache ({folder}); create it with\n{hint}")


def _from_hub(spec: str, lang: str) -> BeirDataset:
    try:
        from beirx.data.hub_source import load_hub_dataset
    except ImportError as exc:
        raise MissingExtraError(exc.name or "huggingface_hub", "hub", f"loading {spec!r} from the Hugging Face Hub") \
            from exc
    return load_hub_dataset(spec[3:], lang=lang, revision=None)


def _local_folder(spec: str) -> Path | None:
    """``spec`` as a dataset folder, or None when it should be read as a catalogue name."""
    path = Path(spec).expanduser()
    if not path.is_dir():
        return None
    missing = beir_layout_problems(path)
    if not missing:
        return path.resolve()
    if spec.lower() in catalogue.names() or spec.lower() in catalogue.GROUPS:
        log.warning("folder %s is not in BEIR layout; reading %r as the catalogue dataset", path, spec)
        return None
    subsets = sorted(p.name for p in path.iterdir() if p.is_dir() and not beir_layout_problems(p))
    if subsets:
        raise BeirxError(f"{path} holds several datasets; pass one of: "
                         f"{', '.join(str(path / s) for s in subsets)}")
    raise BeirxError(f"{path} is not a BEIR dataset folder: missing {', '.join(missing)}")


def resolve_translation(translated: str, source: str | None = None, lang: str | None = None,
                        src: str | None = None) -> tuple[BeirDataset, BeirDataset]:
    """``(source, translation)`` for commands that compare a translation with its original (quality, review).

    ``translated`` is a folder or catalogue name; ``lang``/``src`` and ``source`` default to what ``beirx
    translate``'s manifest recorded (``src`` else ``en``); a catalogue name's source is the same name.
    """
    folder = Path(translated).expanduser()
    if not folder.is_dir() and not translated.strip().startswith("hf:"):
        _refuse_missing_folder(translated.strip())  # a folder that does not exist, not a missing --lang
        catalogue.get(translated)  # nor a name that is in no catalogue
    manifest = BeirDataset(folder).translation if folder.is_dir() else None
    lang = lang or (manifest.target_language if manifest else None)
    src = src or (manifest.source_language if manifest else "en")
    if not lang:
        raise BeirxError("pass the translation's language with --lang")
    target = resolve_dataset(translated, lang=lang)
    source_spec = source or (manifest.source.path if manifest else None)
    if source_spec is None and folder.is_dir():
        raise BeirxError(f"{folder} has no beirx translation manifest: pass the original dataset with --source")
    return resolve_dataset(source_spec or translated, lang=src), target
