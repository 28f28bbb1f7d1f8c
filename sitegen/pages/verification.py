"""Each run's verification as the site shows it: the checker's verdict (sitegen.check), made once when
the run's bundle is read (what its pages and the settling need of it kept as pieces with its entry)
and settled across the runs at every build.

A run's page, its index row and its lines of runs.json and runs.csv say one of: verified (signed by
whom, its raw records recomputing), signed, modified after signing, imported from another tool, or
unsigned; and an inconsistent run's page lists its problems.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from runner.bundle.error_lines import located
from sitegen.check.checker import CheckContext, check_data
from sitegen.check.duplicate_index import DuplicateIndex, searched
from sitegen.check.duplicates import Claim, problems_of
from sitegen.check.verdict import Problem, Verdict
from sitegen.content.catalog import CACHE_DIR, UNREAD, Piece, RunEntry, Scanned, entry_of, piece_positions, pieces_at
from sitegen.content.loader import read_bundle, read_input
from sitegen.importers.source_requests import source_requests_path
from sitegen.publish.layout import read_kept
from sitegen.publish.stage import Stage
from sitegen.rebuild.keys import fingerprint
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication

MODIFIED = "Modified after signing"
INCONSISTENT = "Inconsistent"
# The index filter's values, in the order it lists them.
STATUSES = ("Verified", "Signed", "Imported", "Unsigned", INCONSISTENT, MODIFIED)
_claim_decoder = msgspec.msgpack.Decoder(Claim)


class Verification(msgspec.Struct, frozen=True):
    """What a reader is told of a run's verification: its status (one of STATUSES), the sentence
    saying it, and an inconsistent run's problems, one line each (`file:$.field: message`)."""

    status: str
    sentence: str
    problems: list[str] = []


def verdict_of(run: Scanned) -> Verdict:
    """The checker's verdict on the run's bundle bytes and the files beside it (its signatures, records,
    sums and the nearest allowed_signers); the build replaces it with the settled one (settled)."""
    return check_data(run.path, run.data, CheckContext(), run.bundle if run.clean else None, beside=not run.alone)


def _origin(verdict: Verdict, alone: bool) -> str:
    """The tool an imported run came from ("AIPerf"), and whether its per-request file is kept beside it
    (not looked for where the run is `alone`, as Scanned's)."""
    tool = (verdict.origin or "").removesuffix(" import")
    kept = not alone and source_requests_path(Path(verdict.path)).is_file()
    return f"from another tool ({tool}){', with its per-request records' if kept else ''}."


def verification(verdict: Verdict, alone: bool) -> Verification:
    """The verdict as the site shows it (`alone`: no file was found beside the run, as Scanned's)."""
    problems = []
    if verdict.problems:
        folder = f"{Path(verdict.path).parent}/"  # pages name the files beside the run, not where the build read them
        problems = [located(Path(p.file).name, p.where, p.message.replace(folder, "")) for p in verdict.problems]
    signer = verdict.signer or "an unknown key"
    if "modified" in (verdict.signature, verdict.records_signature) or any(p.message.startswith("modified after signing")
                                                                          for p in verdict.problems):
        return Verification(MODIFIED, f"signed by {signer}, but changed since.", problems)
    if problems:
        return Verification(INCONSISTENT, "sitegen check finds the problems below.", problems)
    if verdict.kind == "verified":
        return Verification("Verified", f"signed by {signer}; its raw request records recompute every figure.")
    if verdict.signature == "signed":
        records = "no raw request records to recompute" if verdict.records == "absent" else "its raw request records are not signed"
        return Verification("Signed", f"signed by {signer}; {records}.")
    if verdict.origin and verdict.origin.endswith(" import"):
        return Verification("Imported", _origin(verdict, alone))
    if verdict.signature == "unknown signer":
        return Verification("Unsigned", "signed by a key the site's allowed_signers does not name.")
    return Verification("Unsigned", "no one has signed these figures.")


def _claim(run: Scanned) -> bytes:
    verdict = run.shared(verdict_of)
    return msgspec.msgpack.encode(Claim(verdict.path, verdict.run_id, verdict.digests))


def _status(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(run.shared(shown_of).status)


def _shown(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(run.shared(shown_of))


def shown_of(run: Scanned) -> Verification:
    """The run's verification (shared by the pieces that show it)."""
    return verification(run.shared(verdict_of), run.alone)


STATUS = Piece("verification_status", _status)  # its status alone (one of STATUSES), as msgpack: what the listings read
CLAIM = Piece("claim", _claim)  # what settling reads of every run's verdict (its Claim), as msgpack: a few hundred bytes
SHOWN = Piece("verification", _shown)  # the Verification the run's page shows, as msgpack
_shown_decoder = msgspec.msgpack.Decoder(Verification)


def shown(piece: memoryview | bytes) -> Verification:
    """A run's Verification from its SHOWN piece."""
    return _shown_decoder.decode(piece)


class Settled(msgspec.Struct, array_like=True):
    """What settling found among a build's runs (`key`: their file names and fingerprints), kept in the
    state folder: the next build with the same runs takes it rather than searching every run again, and
    one whose runs changed a little searches only around them (`index`, made by the same `code`)."""

    key: str
    found: dict[str, list[Problem]] = {}  # the problems only the whole set shows, by run id
    code: str = ""
    index: DuplicateIndex | None = None


SETTLED = CACHE_DIR + "settled"  # a bookkeeping file of the plan (Settled, msgpack)


def settled(runs: Path, entries: Sequence[RunEntry], pieces: Sequence[memoryview], code: str,
            remembered: Settled | None = None) -> Settled:
    """The problems settling across every run finds (their measurements found under another id, an id
    used twice), by run id; `pieces` are the runs' CLAIM pieces, in order. Taken from `remembered`
    where that was found by the same `code` among the same runs (the files of `runs` by name and
    fingerprint), and its search kept where only the runs differ."""
    named = [(e.name, e.fingerprint) for e in entries]
    key = fingerprint(msgspec.msgpack.encode([code, str(runs), named]))
    if remembered is not None and remembered.key == key:
        return remembered
    claims = [_claim_decoder.decode(piece) for piece in pieces]
    kept = remembered.index if remembered is not None and remembered.code == code else None
    index = searched(claims, named, kept)
    found = problems_of(claims, index.copies)
    return Settled(key, {entries[position].id: problems for position, problems in found.items()}, code, index)


def settled_entries(runs: Path, entries: list[RunEntry], pieces: Sequence[Piece], state: Path, code: str) -> tuple[list[RunEntry], Settled]:
    """The entries, with each run that settling across runs changed made again from its bundle with its
    settled verdict: its pieces show it, and its fingerprint (so the key of every output reading it)
    covers it. Its stamp matches no file: the next build reads it again and settles afresh. Also what
    settling found, for write_settled; the previous build's (from its `state` folder) where it holds
    (the same runs, and the same `code`: the build's code digest)."""
    positions = piece_positions(pieces)
    found = settled(runs, entries, pieces_at(entries, positions[CLAIM.name]), code, read_kept(state, SETTLED, Settled))
    if not found.found:
        return entries, found
    remade = []
    for entry in entries:
        problems = found.found.get(entry.id)
        if problems is not None:
            path = runs / entry.name
            data = read_input(path)
            verdict = _checked_again(path, data)
            verdict.problems.extend(problems)
            again = entry_of(path, UNREAD, data, pieces, known={verdict_of: verdict})
            marked = fingerprint(again.fingerprint.encode() + msgspec.msgpack.encode(verdict.problems))
            entry = msgspec.structs.replace(again, fingerprint=marked)
        remade.append(entry)
    return remade, found


def _checked_again(path: Path, data: bytes) -> Verdict:
    """The checker's verdict on a bundle read again: for the few runs settling changes, rather than a
    verdict kept with every run."""
    bundle, clean = read_bundle(path, data)
    return verdict_of(Scanned(bundle, path, data, clean=clean))


def write_settled(stage: Stage, plan: Publication, found: Settled) -> None:
    """Keep what settling found for the next build, written only when the runs it was found among changed."""
    if not plan.unchanged(Output(SETTLED, facts=(found.key,))):
        stage.write(SETTLED, msgspec.msgpack.encode(found))


def consistent(entries: list[RunEntry], positions: dict[str, int]) -> list[RunEntry]:
    """The runs the checker found no problem with (what `sitegen build --strict` builds)."""
    position = positions[SHOWN.name]
    return [e for e in entries if shown(e.piece(position)).status not in (INCONSISTENT, MODIFIED)]
