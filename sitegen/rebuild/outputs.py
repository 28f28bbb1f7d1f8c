"""What each output of the site is made from, and the one rule that turns that into its rebuild key.

Every page, download and cache file a build writes is first declared as an `Output`: its path and
the inputs it is made from (the bundles of its runs, other facts it shows, whether it shows the
pages' shared context). Its key hashes those inputs with sitegen's code and templates
(`output_key`, which the plan asks): an output renders again exactly when one of them changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from sitegen.rebuild.keys import digest


class Output(msgspec.Struct, frozen=True):
    """A file of the site or of the build's bookkeeping, or a folder of files rendered together (a run's:
    its path ends in "/"; a page alone in its folder is its file), and every input it is made from
    besides the code and templates, which every output is made with."""

    path: str
    bundles: Sequence[str] = ()  # the fingerprints of the bundles it is made from, in the order it reads them
    facts: Sequence[str | bytes] = ()  # what else it shows that its bundles do not decide: a group's name, a partner's title
    context: bool = False  # it is a page: it shows the context every page shares (the navigation's pages)


class Shared(msgspec.Struct, frozen=True):
    """What every output of a build is made with: sitegen's code and templates (keys.code_digest), and
    the context the pages share (pages.context.Site.context_key)."""

    code: str
    context: str


def output_key(output: Output, shared: Shared) -> str:
    """The key of an output: a hash of the code and of every input it declares. Bundles' fingerprints
    are all as long, so they are joined (one part, however many runs) and cannot run together."""
    return digest(shared.code, shared.context if output.context else "", "".join(output.bundles), *output.facts)
