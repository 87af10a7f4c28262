"""A small translated dataset to review, and ``beirx review`` running as a real server process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import REPO, write_beir
from local_processes import free_port, stop

from beirx.artifacts.manifest import TranslationManifest

ENGLISH = ["Vitamin D deficiency is common in northern countries.", "Antibiotics do not work against viral infections.",
           "Smoking during pregnancy harms the baby.", "Regular exercise lowers the risk of heart disease.",
           "The library opens at nine in the morning.", "Children should drink more water during the summer."]
SPANISH = ["La deficiencia de vitamina D es común en los países del norte.",
           "Los antibióticos no funcionan contra las infecciones virales.", "Fumar durante el embarazo daña al bebé.",
           "El ejercicio regular reduce el riesgo de enfermedad cardíaca.",
           "La biblioteca abre a las nueve de la mañana.", "Los niños deberían beber más agua durante el verano."]
STARTUP_SECONDS = 180.0  # a loaded CI machine can take a minute to import the app
SCRIPT_DOC = "d5"
SCRIPT_TEXT = "<script>document.title='pwned'</script><b>negrita</b> & más"


def write_pair(root: Path) -> tuple[Path, Path]:
    """An English dataset and its Spanish translation (with a translation.json); document d5's translation holds
    markup that must show as text, d2 has a title, q3's translation was left in English."""
    def docs(texts, titled):
        return [{"_id": f"d{i}", "title": titled if i == 2 else "", "text": t} for i, t in enumerate(texts)]

    english = write_beir(root / "en", docs(ENGLISH, "Pregnancy"), [{"_id": f"q{i}", "text": t} for i, t in enumerate(ENGLISH)],
                         {"test": [(f"q{i}", f"d{i}", 1) for i in range(len(ENGLISH))]})
    spanish_docs = docs(SPANISH, "Embarazo")
    spanish_docs[5]["text"] = SCRIPT_TEXT
    queries = [{"_id": f"q{i}", "text": t} for i, t in enumerate(SPANISH)]
    queries[3]["text"] = ENGLISH[3]
    spanish = write_beir(root / "es", spanish_docs, queries, {"test": [(f"q{i}", f"d{i}", 1) for i in range(len(ENGLISH))]})
    from artifact_fixtures import translation_manifest

    manifest = translation_manifest(name="toy", src="en", tgt="es", translator={"backend": "apertium"})
    manifest.source.path = str(english)
    manifest.target.path = str(spanish)
    manifest.save(TranslationManifest.path_in(spanish))
    return english, spanish


class ReviewServer:
    """``python -m beirx review DATASET ...`` in a subprocess; ``kill()`` is SIGKILL (nothing gets to clean up)."""

    def __init__(self, dataset: Path, *args: str, env: dict[str, str] | None = None):
        self.dataset, self.args, self.extra_env = dataset, args, env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log = dataset.parent / f"review-server-{self.port}.log"

    def start(self) -> ReviewServer:
        env = {**os.environ, "PYTHONPATH": str(REPO), **self.extra_env}
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "beirx", "review", str(self.dataset), "--port",
                                             str(self.port), *self.args], stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"beirx review exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                urllib.request.urlopen(self.url + "/static/review.css", timeout=2).read()
                return self
            except urllib.error.HTTPError:
                return self  # answering (e.g. 401 without the token)
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"beirx review did not answer in {STARTUP_SECONDS:.0f} s:\n{self.log.read_text()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop(self.process)


def post(url: str, fields: dict[str, str], headers: dict[str, str] | None = None,
         cookies: str = "") -> tuple[int, str]:
    """A form post from outside a browser: ``(status, body)``; redirects are not followed."""
    from urllib.parse import urlencode

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(url, urlencode(fields).encode(), {"Cookie": cookies, **(headers or {})})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def scripted_review(dataset_root: Path, ratings: dict[str, list[tuple[int, int]]]) -> Path:
    """A review of every query and document of ``dataset_root`` (in file order), rated as scripted:
    ``ratings[annotator][k] = (adequacy, fluency)`` of item k+1; exported to review/review.json."""
    from beirx.data.dataset import BeirDataset
    from beirx.review.export import export_review
    from beirx.review.store import Item, ReviewStore

    dataset = BeirDataset(dataset_root)
    rows = [("queries", q.id, q.text, "") for q in dataset.queries.values()]
    rows += [("corpus", d.id, d.joined(), d.title) for d in dataset.iter_corpus()]
    store = ReviewStore.in_folder(dataset_root, create=True)
    store.create_sample([Item(n, field, i, "random", f"source of {i}", text, title)
                         for n, (field, i, text, title) in enumerate(rows, 1)],
                        {"dataset": {"path": str(dataset_root), "name": dataset.name, "lang": "es",
                                     "checksum": dataset.checksum()},
                         "source_lang": "en", "size": len(rows), "seed": 0, "strata": {"random": len(rows)},
                         "quality_report": None})
    for annotator, scores in ratings.items():
        for position, (adequacy, fluency) in enumerate(scores, 1):
            store.save_rating(position, annotator, adequacy, fluency, {}, None)
    store.close()
    return export_review(dataset_root)[1]
