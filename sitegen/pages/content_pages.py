"""The content pages: content/pages/*.md, each at its own folder of the site."""

from __future__ import annotations

from sitegen.pages.context import Site, write_page
from sitegen.pages.kinds import Kind
from sitegen.publish.stage import Stage
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.urls import Page, page_dir


def write_content_pages(stage: Stage, site: Site, plan: Publication) -> None:
    """Each content page whose title or text changed (or the navigation, which names them all)."""
    for page in site.pages:
        target = Page(page_dir(page.slug))
        if not plan.unchanged(Output(target.file, facts=(page.title, page.html), context=True)):
            write_page(stage, site, "page.html", target, page=page)


KIND = Kind(name="content pages", lane="main", write=write_content_pages)
