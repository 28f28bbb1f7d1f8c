"""The published site's files with the key of the output each belongs to, and what changed since an
earlier listing: what an upload to a bucket needs to send only the files that changed.

A key is a hash of the code and every input of its output, so two builds that give a file the same
key wrote the same bytes. The listing is text, one `key<TAB>path` line a file, sorted by path: a
host keeps the one it last uploaded beside the site and hands it back as `--since`.
"""

from __future__ import annotations

import re
from pathlib import Path

from sitegen.errors import InputError, UsageError
from sitegen.publish.layout import STATE, describes, is_bookkeeping, work_folder
from sitegen.publish.manifest import read_published

MAX_LISTING_BYTES = 512 * 1024 * 1024  # an earlier listing: ~70 bytes a file, 650,000 files at 100,000 runs
_LINE = re.compile(r"([0-9a-f]{8,128})\t([^\t\x00-\x1f\x7f]+)")

Listing = dict[str, str]  # path -> key of its output


def published_listing(out: Path) -> Listing:
    """Each file of the site in `out` with its output's key, from the manifest of the build that published it."""
    out = out.resolve()
    state = work_folder(out) / STATE
    if not out.is_dir():
        raise UsageError(f"{out}: no site here; build it first with: sitegen build --out {out}")
    if not describes(state, out):
        raise UsageError(f"{out}: sitegen has no record of how this site was built (copied, changed or built by "
                         f"something else since); build it again with: sitegen build --out {out}")
    outputs, _ = read_published(state, None)
    if not outputs:
        raise UsageError(f"{out}: the build's record of its outputs is missing or unreadable; build it again")
    return {path: key for key, files in outputs.values() for path in files if not is_bookkeeping(path)}


def format_listing(listing: Listing) -> str:
    """The listing as text: `key<TAB>path` lines, sorted by path."""
    return "".join(f"{listing[path]}\t{path}\n" for path in sorted(listing))


def read_listing(path: Path) -> Listing:
    """An earlier listing, as `format_listing` wrote it; a bad line is one error naming the file and line."""
    try:
        if path.stat().st_size > MAX_LISTING_BYTES:
            raise InputError(path, None, f"larger than {MAX_LISTING_BYTES // 2**20} MB: not a listing sitegen wrote")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    listing: Listing = {}
    for number, line in enumerate(text.splitlines(), start=1):
        found = _LINE.fullmatch(line)
        if found is None:
            raise InputError(path, f"line {number}", "expected a key (hex), a tab and a path, as `sitegen files` writes")
        listing[found.group(2)] = found.group(1)
    return listing


def changes(before: Listing, now: Listing) -> list[str]:
    """`+ path` for each file new or changed since `before`, then `- path` for each file gone, sorted."""
    sent = [f"+ {path}" for path in sorted(now) if before.get(path) != now[path]]
    return sent + [f"- {path}" for path in sorted(before.keys() - now.keys())]
