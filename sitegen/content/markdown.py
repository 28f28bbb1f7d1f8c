"""Markdown pages from content/pages/*.md, rendered safely: raw HTML is escaped, never passed through.

A page rendered by the previous build (the same text, kept in its cache) is not rendered again, and
markdown-it is imported only when one is: a rebuild after a bundle changed does not pay for its import.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from sitegen.errors import InputError, raise_if_any
from sitegen.rebuild.keys import digest
from sitegen.slug import heading_slug

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# Top-level folders of the built site a page slug must not take over.
RESERVED_SLUGS = frozenset({"runs", "models", "gpus", "compare", "static", "schema"})
_NAME_RE = re.compile(r"(?:(\d+)-)?([a-z0-9]+(?:-[a-z0-9]+)*)")


class ContentPage(msgspec.Struct, frozen=True):
    """One rendered page: its URL slug, title for the nav and <h1>, body HTML without the h1."""

    slug: str
    title: str
    html: str
    source: Path
    text: str = ""  # a hash of the page file's bytes: what its title and html are rendered from


Rendered = dict[str, tuple[str, str]]  # pages' (title, html) by the hash of their text, as a build cache keeps them


def markdown() -> MarkdownIt:
    """CommonMark plus tables, with raw HTML off so markdown can never inject markup."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def order_and_slug(path: Path) -> tuple[int, str]:
    """"10-about.md" -> (10, "about"); a name without a number sorts after the numbered ones."""
    match = _NAME_RE.fullmatch(path.stem)
    if match is None:
        raise InputError(path, None, "page file names are lowercase letters, digits and hyphens, optionally numbered: '10-about.md'")
    number, slug = match.groups()
    if slug in RESERVED_SLUGS:
        raise InputError(path, None, f"the page name {slug!r} is taken by the site's own {slug}/ folder")
    return (int(number) if number is not None else 1 << 62), slug


def _plain_text(inline: Token) -> str:
    """The visible text of an inline token (emphasis and code marks dropped)."""
    return "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))


def add_heading_ids(tokens: list[Token]) -> None:
    """Give each heading an id from its text ("Imported results" -> "imported-results"), so sections can be linked."""
    used: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            base = heading_slug(_plain_text(tokens[i + 1]))
            anchor, n = base, 1
            while anchor in used:
                n += 1
                anchor = f"{base}-{n}"
            used.add(anchor)
            token.attrSet("id", anchor)


def wrap_tables(tokens: list[Token], title: str) -> list[Token]:
    """Each table in a box that scrolls sideways where the table is wider than the page: a region a
    keyboard can reach and scroll, named by the heading above it (the page's title above the first),
    numbered where one heading has several tables, so that no two regions share a name."""
    from markdown_it.token import Token

    wrapped: list[Token] = []
    heading, count = title, 0
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            heading, count = _plain_text(tokens[i + 1]).strip() or title, 0
        elif token.type == "table_open":
            count += 1
            name = heading if count == 1 else f"{heading}, table {count}"
            wrapped.append(Token("html_block", "", 0, content=f'<div class="prose-table" role="region" tabindex="0" aria-label="{html.escape(name)}">\n'))
        wrapped.append(token)
        if token.type == "table_close":
            wrapped.append(Token("html_block", "", 0, content="</div>\n"))
    return wrapped


def render_page(path: Path, text: str, md: MarkdownIt) -> tuple[str, str]:
    """(title, html) of one page: the title is its first h1, which the html then omits."""
    tokens = md.parse(text)
    add_heading_ids(tokens)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1":
            title = _plain_text(tokens[i + 1]).strip()
            if title:
                body = wrap_tables(tokens[:i] + tokens[i + 3:], title)
                return title, md.renderer.render(body, md.options, {})
    raise InputError(path, "line 1", "a page needs a '# Title' heading")


def load_page(path: Path, slug: str, md: Callable[[], MarkdownIt], rendered: Rendered) -> ContentPage:
    """Read one page file, and render it unless `rendered` has its text's title and html."""
    from sitegen.content.loader import read_input

    data = read_input(path)
    text = digest(data)
    if text not in rendered:
        try:
            rendered[text] = render_page(path, data.decode("utf-8"), md())
        except UnicodeDecodeError as exc:
            raise InputError(path, None, f"cannot read as UTF-8 text: {exc}") from None
    title, html = rendered[text]
    return ContentPage(slug=slug, title=title, html=html, source=path, text=text)


def load_pages(folder: Path, rendered: Rendered | None = None) -> list[ContentPage]:
    """Every page in folder ('_'-prefixed and hidden files skipped), ordered by leading number, then name;
    all errors at once. Pages whose text is in `rendered` (the previous build's) are not rendered again."""
    rendered = dict(rendered or {})
    md = functools.cache(markdown)
    errors: list[InputError] = []
    named: list[tuple[int, str, Path]] = []
    for path in folder.glob("*.md"):
        if path.name.startswith(("_", ".")):
            continue
        try:
            named.append((*order_and_slug(path), path))
        except InputError as exc:
            errors.append(exc)
    pages: list[ContentPage] = []
    seen: dict[str, Path] = {}
    for _, slug, path in sorted(named):
        if slug in seen:
            errors.append(InputError(path, None, f"page name {slug!r} is already used by {seen[slug]}"))
            continue
        seen[slug] = path
        try:
            pages.append(load_page(path, slug, md, rendered))
        except InputError as exc:
            errors.append(exc)
    raise_if_any(errors)
    return pages
