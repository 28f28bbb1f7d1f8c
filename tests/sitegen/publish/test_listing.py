"""`sitegen files`: the built site's files by output key, what changed since an upload, and the
bucket recipe of docs/publishing.md run end to end against a folder standing in for the bucket."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
from click.testing import CliRunner, Result

from runner.bundle.schema import encode_bundle
from sitegen.build import build_site
from sitegen.cli import main
from tests.builders import ROOT, tree_digest
from tests.sample_site import INKLING, LING, MIMO, built_sample, sample_run

# The `aws s3` commands the recipe uses (cp FILE, cp FOLDER --recursive, rm), on a folder named by
# the bucket's URL: what the recipe sends, without a bucket service. Each object it writes is logged.
AWS = '''#!{python}
import os, shutil, sys
from pathlib import Path
args = [a for a in sys.argv[2:] if a != "--only-show-errors"]
if "--endpoint-url" in args:
    del args[args.index("--endpoint-url"):args.index("--endpoint-url") + 2]
root = Path(os.environ["FAKE_BUCKETS"])
def local(url):
    return root / url.removeprefix("s3://") if url.startswith("s3://") else Path(url)
def put(source, target):
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if target.is_relative_to(root):
        with open(root / "sent.log", "a") as log:
            log.write(str(target.relative_to(root)) + "\\n")
verb, rest = args[0], args[1:]
if verb == "rm":
    local(rest[0]).unlink()
elif "--recursive" in rest:
    source, target = map(local, [a for a in rest if a != "--recursive"])
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        put(path, target / path.relative_to(source))
else:
    source, target = map(local, rest)
    if not source.is_file():
        sys.exit("fatal error: An error occurred (404) when calling the HeadObject operation: Not Found")
    put(source, target)
'''


def files(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["files", *map(str, args)])


def listing_of(result: Result) -> dict[str, str]:
    assert result.exit_code == 0, result.output
    return {path: key for key, path in (line.split("\t") for line in result.output.splitlines())}


def test_the_listing_names_every_file_of_the_site_once_with_its_output_key(tmp_path: Path) -> None:
    _, site = built_sample(tmp_path)
    listing = listing_of(files("--out", site))
    on_disk = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert sorted(listing) == on_disk
    assert listing[f"runs/{LING}/index.html"] != listing[f"runs/{MIMO}/index.html"]
    assert all(len(key) == 32 for key in listing.values())


def test_since_an_upload_only_what_a_changed_and_a_removed_run_touch(tmp_path: Path) -> None:
    content, site = built_sample(tmp_path)
    uploaded = tmp_path / "uploaded.tsv"
    uploaded.write_text(files("--out", site).output)
    assert files("--out", site, "--since", uploaded).output == ""  # nothing changed since
    before = tree_digest(site)
    faster = msgspec.structs.replace(sample_run(LING), notes="measured again after a driver update")
    (content / "runs" / f"{LING}.json").write_bytes(encode_bundle(faster))
    (content / "runs" / f"{INKLING}.json").unlink()
    build_site(content, site)
    lines = files("--out", site, "--since", uploaded).output.splitlines()
    sent = {line[2:] for line in lines if line.startswith("+ ")}
    gone = {line[2:] for line in lines if line.startswith("- ")}
    assert f"runs/{LING}/index.html" in sent and "index.html" in sent
    assert f"runs/{MIMO}/index.html" not in sent  # its page did not change
    assert f"runs/{INKLING}/index.html" in gone and not any(INKLING in path for path in sent)
    after = tree_digest(site)
    assert {path for path in after if before.get(path) != after[path]} <= sent  # every new or changed file goes
    assert gone == before.keys() - after.keys()


def test_a_listing_it_did_not_write_is_one_error_naming_the_file_and_line(tmp_path: Path) -> None:
    _, site = built_sample(tmp_path)
    listing = tmp_path / "listing.tsv"
    listing.write_text(files("--out", site).output.replace("\t", " ", 1).replace("\t", "\t\x1b[2J", 1))
    result = files("--out", site, "--since", listing)
    assert result.exit_code == 1
    assert result.output == f"error: {listing}:line 1: expected a key (hex), a tab and a path, as `sitegen files` writes\n"


def test_a_site_it_has_no_record_of_is_refused(tmp_path: Path) -> None:
    _, site = built_sample(tmp_path)
    copy = tmp_path / "copied"
    shutil.copytree(site, copy)
    result = files("--out", copy)
    assert result.exit_code == 1 and result.output.startswith(f"error: {copy}: sitegen has no record of how this site was built")
    assert files("--out", tmp_path / "nothing").output.startswith("error: ")


def test_the_bucket_recipe_publishes_the_site_and_then_only_what_changed(tmp_path: Path) -> None:
    recipe = (ROOT / "docs" / "publishing.md").read_text().split("```bash\n")[1].split("```")[0]
    (tmp_path / "publish.sh").write_text(recipe)
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "aws").write_text(AWS.format(python=sys.executable))
    (tools / "aws").chmod(0o755)
    (tools / "sitegen").write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from sitegen.cli import run; run()' \"$@\"\n")
    (tools / "sitegen").chmod(0o755)
    buckets = tmp_path / "buckets"
    bucket = buckets / "results"
    bucket.mkdir(parents=True)
    content, _ = built_sample(tmp_path)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "BUCKET": "s3://results", "FAKE_BUCKETS": str(buckets),
           "S3_ENDPOINT": "https://s3.example.invalid", "PYTHONPATH": str(ROOT)}

    def publish() -> list[str]:
        (buckets / "sent.log").unlink(missing_ok=True)
        done = subprocess.run(["bash", "publish.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return (buckets / "sent.log").read_text().splitlines()

    first = publish()
    site_files = tree_digest(tmp_path / "site")
    assert {k: v for k, v in tree_digest(bucket).items() if k != ".sitegen-files.tsv"} == site_files
    assert len(first) == len(site_files) + 1  # every file, then the listing

    (content / "runs" / f"{INKLING}.json").unlink()
    second = publish()
    assert {k: v for k, v in tree_digest(bucket).items() if k != ".sitegen-files.tsv"} == tree_digest(tmp_path / "site")
    assert not any(INKLING in path for path in tree_digest(bucket))
    changed = (tmp_path / "changes.txt").read_text().splitlines()
    assert set(second) == {f"results/{line[2:]}" for line in changed if line.startswith("+ ")} | {"results/.sitegen-files.tsv"}
    assert f"results/runs/{MIMO}/index.html" not in second and len(second) < len(first)
    assert publish() == ["results/.sitegen-files.tsv"]  # nothing changed: only the listing again
