"""Series pages in a build: a synthetic series with an injected regression shows its notice on the series
page, the newest run's page, the index and the feed; one inside the noise shows none; and a rebuild after one
run changed renders that run's series page again and no other."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from pytest import MonkeyPatch

from runner.bundle.files import write_bundle
from runner.bundle.schema import Bundle
from sitegen.build import build_site
from sitegen.figures.series import series_key
from sitegen.pages import series_pages
from sitegen.urls import series_dir
from tests.builders import make_bundle, same_as_fresh
from tests.page_text import GOLDEN, matches_golden

DAY = dt.timedelta(days=1)
START = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
NOTICE = "Regression: Single-stream tok/s 10.0% below the median of the 5 runs before (threshold 5.0%)"


def dated_runs(scales: list[float], prefix: str = "run", **changes: object) -> list[Bundle]:
    """One run a day of the builders' setup, each scaled as given."""
    return [make_bundle(run_id=f"{prefix}-{i:02d}", scale=s, measured_at=START + i * DAY, version=f"0.{27 + i // 3}.0", **changes)
            for i, s in enumerate(scales)]


def steady(count: int, seed: int = 7) -> list[float]:
    """Scales within 1 % of each other, as reruns of one setup measure."""
    rng = random.Random(seed)
    return [1 + rng.uniform(-0.01, 0.01) for _ in range(count)]


def content_of(tmp_path: Path, bundles: list[Bundle]) -> Path:
    content = tmp_path / "content"
    (content / "runs").mkdir(parents=True)
    for bundle in bundles:
        write_bundle(content / "runs" / f"{bundle.id}.json", bundle)
    return content


def series_page(out: Path, bundle: Bundle) -> Path:
    return out / series_dir(series_key(bundle).id) / "index.html"


def test_an_injected_regression_shows_on_the_series_page_the_run_page_the_index_and_the_feed(tmp_path: Path) -> None:
    runs = dated_runs([1.0] * 6 + [0.9])
    out = tmp_path / "site"
    build_site(content_of(tmp_path, runs), out)
    page = series_page(out, runs[0]).read_text()
    assert NOTICE in page
    assert page.count('<td class="num">') >= 7 and "0.29.0" in page  # every run's figures, with its version
    newest = (out / "runs" / runs[-1].id / "index.html").read_text()
    assert NOTICE in newest and "This run’s series" in newest
    older = (out / "runs" / runs[0].id / "index.html").read_text()
    assert "This run’s series" in older and "Regression:" not in older
    index = (out / "index.html").read_text()
    assert NOTICE in index and series_dir(series_key(runs[0]).id) in index
    feed = (out / "feed.xml").read_text()
    assert f"<summary>{NOTICE}, and " in feed and feed.count("/notice/") == 1  # an entry per series, by its headline notice


def test_a_series_page_matches_its_golden_copy(tmp_path: Path) -> None:
    """The page of a series with an injected regression, as reviewed (tests/golden/series/)."""
    runs = dated_runs([1.0] * 6 + [0.9])
    out = tmp_path / "site"
    build_site(content_of(tmp_path, runs), out)
    path = series_dir(series_key(runs[0]).id) + "index.html"
    matches_golden((out / path).read_bytes(), GOLDEN / path)


def test_an_improvement_is_marked_as_one(tmp_path: Path) -> None:
    runs = dated_runs([1.0] * 6 + [1.2])
    out = tmp_path / "site"
    build_site(content_of(tmp_path, runs), out)
    assert "Improvement: Single-stream tok/s 20.0% above the median of the 5 runs before" in series_page(out, runs[0]).read_text()


def test_changes_inside_the_noise_give_no_notice(tmp_path: Path) -> None:
    runs = dated_runs(steady(8))
    out = tmp_path / "site"
    build_site(content_of(tmp_path, runs), out)
    for page in (series_page(out, runs[0]), out / "runs" / runs[-1].id / "index.html", out / "index.html", out / "feed.xml"):
        text = page.read_text()
        assert "Regression" not in text and "Improvement" not in text
    assert "This run’s series" in (out / "runs" / runs[-1].id / "index.html").read_text()


def test_a_lone_run_has_no_series(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(content_of(tmp_path, [make_bundle("lone")]), out)
    assert not (out / "series").exists()
    assert "This run’s series" not in (out / "runs" / "lone" / "index.html").read_text()


def test_a_rebuild_renders_again_the_series_page_of_the_changed_run_only(tmp_path: Path) -> None:
    first = dated_runs(steady(6))
    other = dated_runs(steady(6, seed=3), prefix="other", gpu_count=4)
    content = content_of(tmp_path, first + other)
    out = tmp_path / "site"
    build_site(content, out)
    pages = {name: series_page(out, runs[0]) for name, runs in (("first", first), ("other", other))}
    before = {name: page.stat().st_mtime_ns for name, page in pages.items()}
    write_bundle(content / "runs" / f"{first[-1].id}.json", dated_runs([1.0] * 5 + [0.9])[-1])
    build_site(content, out)
    assert pages["first"].stat().st_mtime_ns != before["first"]
    assert pages["other"].stat().st_mtime_ns == before["other"]
    assert "Regression: Single-stream tok/s" in pages["first"].read_text()
    assert "Regression: Single-stream tok/s" in (out / "runs" / first[-1].id / "index.html").read_text()
    assert same_as_fresh(content, out)


def test_a_newer_run_takes_the_notice_from_the_run_it_follows(tmp_path: Path) -> None:
    runs = dated_runs([1.0] * 6 + [0.9])
    content = content_of(tmp_path, runs)
    out = tmp_path / "site"
    build_site(content, out)
    later = dated_runs([1.0] * 6 + [0.9, 1.0])[-1]
    write_bundle(content / "runs" / f"{later.id}.json", later)
    build_site(content, out)
    assert "Regression:" not in (out / "runs" / runs[-1].id / "index.html").read_text()
    assert "Regression:" not in (out / "index.html").read_text()
    assert same_as_fresh(content, out)


def test_a_changed_older_run_changes_the_newest_runs_notice(tmp_path: Path) -> None:
    """The newest run's bundle is the same, but its baseline moved: its page is rendered again."""
    scales = [1.0, 1.0, 1.0, 0.9, 0.9, 1.0, 0.9]
    runs = dated_runs(scales)
    content = content_of(tmp_path, runs)
    out = tmp_path / "site"
    build_site(content, out)
    newest = out / "runs" / runs[-1].id / "index.html"
    assert "Regression:" in newest.read_text()
    write_bundle(content / "runs" / f"{runs[5].id}.json", dated_runs(scales[:5] + [0.9])[5])  # the baseline's median: 0.9
    build_site(content, out)
    assert "Regression:" not in newest.read_text()
    assert same_as_fresh(content, out)


def test_a_rebuild_makes_again_only_the_notices_of_the_series_whose_runs_changed(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    first = dated_runs(steady(6) + [0.9])  # runs that differ, as measurements do: no one submitted twice
    other = dated_runs(steady(6, seed=3) + [0.89], prefix="other", gpu_count=4)
    content = content_of(tmp_path, first + other)
    out = tmp_path / "site"
    build_site(content, out, jobs=1)
    assert (out / "index.html").read_text().count("Regression: Single-stream tok/s") == 2
    made: list[str] = []
    flag = series_pages._flag
    monkeypatch.setattr(series_pages, "_flag", lambda site, series_id: made.append(series_id) or flag(site, series_id))
    write_bundle(content / "runs" / f"{first[-1].id}.json", dated_runs(steady(7))[-1])  # its regression gone
    build_site(content, out, jobs=1)
    assert set(made) == {series_key(first[0]).id}, "the other series' notice is the kept one (the feed and the index each ask)"
    index = (out / "index.html").read_text()
    assert index.count("Regression: Single-stream tok/s") == 1 and series_dir(series_key(other[0]).id) in index
    monkeypatch.undo()
    assert same_as_fresh(content, out)
