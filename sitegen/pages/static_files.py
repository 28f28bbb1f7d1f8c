"""The templates' static files (the stylesheet, the scripts, plotly.js), copied into the site."""

from __future__ import annotations

from sitegen.pages.context import Site
from sitegen.pages.kinds import Kind
from sitegen.publish.stage import Stage
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.urls import static_file


def copy_static(stage: Stage, site: Site, plan: Publication) -> None:
    """Each file of the templates' static folder, copied again only when the templates
    changed (the code digest covers them). Hidden files (`.DS_Store`, an editor's swap file) are no
    part of the site."""
    static = site.templates / "static"
    for source in sorted(static.rglob("*")):
        relative = source.relative_to(static)
        if source.is_file() and not any(part.startswith(".") for part in relative.parts):
            path = static_file(relative.as_posix())
            if not plan.unchanged(Output(path)):
                stage.copy(path, source)


KIND = Kind(name="static", lane="main", write=copy_static)
