"""``beirx review`` in a real browser: headless Debian Chromium (selenium + chromedriver) against the real server
process. The tests share one server and one pair of browsers, and run in order: rate with the keyboard, reload,
kill the server and restart it, two annotators at once, markup shown as text, forged posts and the access token
refused, then export and apply what the browsers entered."""

from __future__ import annotations

import threading

import pytest
from browser import Browsers, skip_reason
from extras import needs
from review_fixtures import SCRIPT_DOC, SCRIPT_TEXT, ReviewServer, jsonl, post, write_pair

from beirx.cli import main
from beirx.review.store import ReviewStore

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """The dataset, its quality report (rule checks), and a running review of 8 items."""
    from beirx.data.dataset import BeirDataset
    from beirx.translate.quality.rule_checks import Checks
    from beirx.translate.quality.run import run_quality

    english, spanish = write_pair(tmp_path_factory.mktemp("review"))
    run_quality(BeirDataset(english), BeirDataset(spanish), src_lang="en", tgt_lang="es", methods=[Checks()],
                show_progress=False)
    server = ReviewServer(spanish, "--sample", "8", "--seed", "3").start()
    yield spanish, server
    server.stop()


@pytest.fixture(scope="module")
def browsers():
    found = Browsers()
    yield found
    found.close()


def _wait(driver, condition, timeout: float = 15.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _login(driver, url: str, name: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(url + "/")
    box = driver.find_element(By.ID, "name")
    box.send_keys(name, Keys.ENTER)
    _wait(driver, lambda d: "/items/" in d.current_url)


def _keys(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def _checked(driver, name: str) -> str | None:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, f"input[name={name}]:checked")
    return found[0].get_attribute("value") if found else None


def test_rate_with_the_keyboard_reload_and_survive_a_killed_server(reviewed, browsers):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    dataset, server = reviewed
    store = ReviewStore.in_folder(dataset)
    items = store.items()
    # 8 items, 2 per stratum; only q3 (left in English, flagged twice by the checks) is suspect, so the rest of
    # the 'worst' share goes to 'random'
    assert [i.stratum for i in items] == ["worst", "queries", "queries", "documents", "documents", "random", "random",
                                          "random"]
    assert (items[0].field, items[0].id) == ("queries", "q3")

    ana = browsers.new()
    _login(ana, server.url, "Ana")
    assert ana.current_url == f"{server.url}/items/1"
    assert "Item 1 of 8 · you rated 0" in ana.find_element(By.ID, "progress-text").text
    assert ana.find_element(By.CSS_SELECTOR, "#translation .body").text == items[0].translation
    _keys(ana, "2", "w")  # adequacy 2, fluency 2
    ana.find_element(By.CSS_SELECTOR, "input[name=error_untranslated][value=major]").click()
    _keys(ana, Keys.ENTER)
    _wait(ana, lambda d: d.current_url.endswith("/items/2"))
    assert "you rated 1" in ana.find_element(By.ID, "progress-text").text

    _keys(ana, "5", "t", "c")  # item 2: adequacy 5, fluency 5, then the correction box
    box = ana.find_element(By.ID, "correction_text")
    assert ana.switch_to.active_element == box
    box.send_keys(Keys.END, " (corregido)")
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    _wait(ana, lambda d: d.current_url.endswith("/items/3"))

    ana.get(f"{server.url}/items/1")  # a reload shows what was saved
    assert (_checked(ana, "adequacy"), _checked(ana, "fluency"), _checked(ana, "error_untranslated")) == ("2", "2", "major")
    assert ana.find_element(By.ID, "saved").is_displayed()

    server.kill()  # SIGKILL: whatever was acknowledged must already be on disk
    server.start()
    ana.get(f"{server.url}/items/2")  # same cookies, same secret: still Ana
    assert (_checked(ana, "adequacy"), _checked(ana, "fluency")) == ("5", "5")
    assert ana.find_element(By.ID, "correction_text").get_attribute("value") == items[1].translation + " (corregido)"
    ratings = {(r.position, r.annotator): r for r in ReviewStore.in_folder(dataset).ratings()}
    assert ratings[(1, "Ana")].errors == {"untranslated": "major"} and ratings[(1, "Ana")].correction is None
    assert ratings[(2, "Ana")].correction == {"text": items[1].translation + " (corregido)"}

    _keys(ana, Keys.ARROW_RIGHT)  # arrows move without saving
    _wait(ana, lambda d: d.current_url.endswith("/items/3"))
    _keys(ana, Keys.ENTER)  # nothing rated: the page says so and stays
    assert "rate adequacy and fluency first" in ana.find_element(By.ID, "error").text
    assert ana.current_url.endswith("/items/3")


def test_two_annotators_at_once(reviewed, browsers):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    dataset, server = reviewed
    ana = browsers.drivers[0]
    ben = browsers.new()
    _login(ben, server.url, "Ben")
    assert ben.current_url == f"{server.url}/items/1"  # Ben starts from his own first unrated item
    for driver in (ana, ben):
        driver.get(f"{server.url}/items/3")
    go = threading.Barrier(2)

    def rate(driver, keys):
        for key in keys:
            _keys(driver, key)
        go.wait()
        _keys(driver, Keys.ENTER)

    threads = [threading.Thread(target=rate, args=(ana, "4r")), threading.Thread(target=rate, args=(ben, "3e"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for driver in (ana, ben):
        _wait(driver, lambda d: not d.current_url.endswith("/items/3"))
    ratings = {(r.position, r.annotator): (r.adequacy, r.fluency) for r in ReviewStore.in_folder(dataset).ratings()}
    assert ratings[(3, "Ana")] == (4, 4) and ratings[(3, "Ben")] == (3, 3)
    for position in (1, 2):  # Ben rates the first two as well, so items 1-3 have two ratings each
        ben.get(f"{server.url}/items/{position}")
        _keys(ben, "2" if position == 1 else "4", "w" if position == 1 else "r", Keys.ENTER)
        _wait(ben, lambda d, p=position: not d.current_url.endswith(f"/items/{p}"))
    ben.get(f"{server.url}/items/3")
    assert (_checked(ben, "adequacy"), _checked(ben, "fluency")) == ("3", "3")
    assert "you rated 3" in ben.find_element(By.ID, "progress-text").text


def test_markup_in_a_translation_shows_as_text(reviewed, browsers):
    from selenium.webdriver.common.by import By

    dataset, server = reviewed
    item = next(i for i in ReviewStore.in_folder(dataset).items() if i.id == SCRIPT_DOC)
    ana = browsers.drivers[0]
    ana.get(f"{server.url}/items/{item.position}")
    assert ana.find_element(By.CSS_SELECTOR, "#translation .body").text == SCRIPT_TEXT
    assert ana.title.endswith("beirx review") and "pwned" not in ana.title
    assert ana.find_elements(By.CSS_SELECTOR, "#translation b, #translation script") == []
    assert "&lt;script&gt;document.title=" in ana.page_source


def test_forged_posts_and_missing_token_are_refused(reviewed):
    dataset, server = reviewed
    before = ReviewStore.in_folder(dataset).rating_count()
    status, _ = post(f"{server.url}/items/4", {"adequacy": "1", "fluency": "1", "csrf": "0" * 64},
                     headers={"Origin": "http://attacker.example"})
    assert status == 403
    status, _ = post(f"{server.url}/items/4", {"adequacy": "1", "fluency": "1", "csrf": "0" * 64})
    assert status == 403  # same origin, but no session token
    assert ReviewStore.in_folder(dataset).rating_count() == before
    import urllib.request

    with urllib.request.urlopen(server.url + "/", timeout=10) as page:  # no inline code may run, no framing
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Frame-Options"] == "DENY" and "HttpOnly" in page.headers["Set-Cookie"]

    guarded = ReviewServer(dataset, "--token", env={"BEIRX_REVIEW_TOKEN": "s3cret-token"}).start()
    try:
        import urllib.error

        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(guarded.url + "/", timeout=10)
        assert denied.value.code == 401 and "access token" in denied.value.read().decode()
        with pytest.raises(urllib.error.HTTPError) as wrong:
            urllib.request.urlopen(guarded.url + "/?token=guess", timeout=10)
        assert wrong.value.code == 401
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(guarded.url + "/?token=s3cret-token", timeout=10) as page:  # cookie set, token dropped
            assert page.status == 200 and page.url == guarded.url + "/" and 'name="csrf"' in page.read().decode()
    finally:
        guarded.stop()
    assert "open http://127.0.0.1:" in guarded.log.read_text() and "?token=s3cret-token" in guarded.log.read_text()


def test_export_and_apply_what_the_browsers_entered(reviewed, capsys):
    krippendorff = needs("krippendorff", "review")
    import numpy as np

    from beirx.artifacts.manifest import TranslationManifest
    from beirx.artifacts.review import ReviewDocument

    dataset, server = reviewed
    assert main(["review", "export", str(dataset)]) == 0
    printed = capsys.readouterr().out
    doc = ReviewDocument.load(dataset / "review" / "review.json")
    assert doc.annotators == ["Ana", "Ben"] and doc.rated_items == 3 and len(doc.items) == 8
    assert [(r.annotator, r.adequacy, r.fluency) for r in doc.items[0].ratings] == [("Ana", 2, 2), ("Ben", 2, 2)]
    matrix = np.array([[2, 5, 4], [2, 4, 3]], dtype=float)  # items 1-3: Ana, Ben (adequacy)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert doc.agreement["adequacy"].alpha == pytest.approx(expected) and doc.agreement["adequacy"].items == 3
    # acceptable: mean adequacy >= 4 and mean fluency >= 3 (item 3: adequacy (4+3)/2 = 3.5 is not); item 1 is the
    # 'worst' stratum, left out of the estimate
    assert [i.acceptable for i in doc.items[:3]] == [False, True, False] and doc.items[3].acceptable is None
    assert (doc.acceptable.estimate.items, doc.acceptable.estimate.acceptable) == (2, 1)
    assert (doc.acceptable.per_stratum["worst"].items, doc.acceptable.per_stratum["worst"].acceptable) == (1, 0)
    low, high = doc.acceptable.estimate.ci_low, doc.acceptable.estimate.ci_high
    assert (low, high) == pytest.approx((0.0945312, 0.9054688), abs=1e-6)  # Wilson, 1 of 2 at 95%
    assert f"Krippendorff's alpha (adequacy, ordinal): {expected:.3f}" in printed

    corpus_before = (dataset / "corpus.jsonl").read_bytes()
    qrels_before = (dataset / "qrels" / "test.tsv").read_bytes()
    item = ReviewStore.in_folder(dataset).items()[1]
    assert (item.field, item.id) == ("queries", "q2")
    field_file = dataset / "queries.jsonl"
    order = [r["_id"] for r in jsonl(field_file)]
    assert main(["review", "apply", str(dataset)]) == 0
    rows = {r["_id"]: r for r in jsonl(field_file)}
    assert rows[item.id]["text"].endswith(" (corregido)")
    assert (dataset / "qrels" / "test.tsv").read_bytes() == qrels_before
    assert [r["_id"] for r in jsonl(field_file)] == order  # IDs and their order kept
    log = jsonl(dataset / "review" / "corrections.jsonl")
    assert [(e["field"], e["id"], e["annotators"]) for e in log] == [(item.field, item.id, ["Ana"])]
    assert log[0]["machine"]["text"] == rows[item.id]["text"].removesuffix(" (corregido)")
    manifest = TranslationManifest.load(dataset / "translation.json")
    assert manifest.corrections.annotators == ["Ana"] and sum(manifest.corrections.records.values()) == 1
    assert (dataset / "corpus.jsonl").read_bytes() == corpus_before
    assert main(["review", "apply", str(dataset)]) == 0  # again: already applied, nothing changes
    assert "changed: 0 queries, 0 documents" in capsys.readouterr().out
    assert len(jsonl(dataset / "review" / "corrections.jsonl")) == 1
