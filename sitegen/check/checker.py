"""Every check of one bundle file, and the verdict they make; `sitegen check` and `sitegen build` both come here."""

from __future__ import annotations

from pathlib import Path

import msgspec

from runner.bundle import files
from runner.bundle.schema import Bundle
from sitegen.check import consistency, method, statuses
from sitegen.check.decoding import Decoded, decode, read_bounded
from sitegen.check.duplicates import digests
from sitegen.check.fields import Found, records
from sitegen.check.recompute import recompute
from sitegen.check.secrets import secret_problems, unknown_secret_problems
from sitegen.check.signing import Signatures, check_signatures
from sitegen.check.tolerances import for_window, measured_by_runner, tokens_per_step
from sitegen.check.verdict import Problem, Verdict
from sitegen.content import loader


class CheckContext(msgspec.Struct, frozen=True):
    """What checks of many bundles share: the allowed_signers file (None: the nearest one above each bundle)."""

    allowed_signers: Path | None = None


def check_file(path: Path, context: CheckContext) -> Verdict:
    """Read the bundle file at `path` (bounded) and check it; an unreadable file is inconsistent with the line that says why."""
    try:
        data = read_bounded(path)
    except files.Unreadable as exc:
        return Verdict(path=str(path), problems=[Problem(str(path), None, str(exc))])
    return check_data(path, data, context)


def check_data(path: Path, data: bytes, context: CheckContext, read: Bundle | None = None, beside: bool = True) -> Verdict:
    """Strictly decode the bytes read from `path` and check the bundle; one that does not decode is
    inconsistent with the one problem that says why. A build that has read a file calls this, with the
    bundle it decoded and checked from the same bytes where the scrub left it as it was (`read`), and
    with `beside` False where its listing of the folder found no file beside the bundle (signatures,
    sums, records), so that none is looked for."""
    decoded = decode(path, data, read)
    if decoded.bundle is None:
        return Verdict(path=str(path), problems=decoded.problems)
    verdict = check_bundle(path, decoded, context, scrubbed=read is not None, beside=beside)
    verdict.problems[:0] = decoded.problems
    return verdict


def check_bundle(path: Path, decoded: Decoded, context: CheckContext, scrubbed: bool = False, beside: bool = True) -> Verdict:
    """The verdict on the bundle read from `path`, as decoded and before any scrub (`scrubbed`: the scrub
    is known to have found nothing in it; `beside`: check_data's).

    Problems that need every bundle (duplicates) are added by duplicates.settle once all are checked.
    """
    bundle = decoded.bundle
    assert bundle is not None
    problems = [Problem(str(path), where, message) for where, message in record_problems(bundle)]
    if beside:
        records, recomputed = recompute(path, bundle)
        signatures = check_signatures(path, context.allowed_signers)
    else:  # what both say of a bundle with no file beside it, without looking
        records, recomputed, signatures = "absent", [], Signatures(bundle="unsigned")
    # Where the scrub finds no secret in the bundle's fields, only the keys it does not know can hold one.
    clean = scrubbed or loader.scrub(bundle) is bundle
    secrets = unknown_secret_problems(path, decoded.unknown) if clean else secret_problems(path, decoded.raw)
    return Verdict(
        path=str(path), problems=[*problems, *recomputed, *secrets, *signatures.problems],
        run_id=bundle.id, digests=digests(bundle), signature=signatures.bundle, signer=signatures.signer,
        records=records, records_signature=signatures.records, origin=bundle.origin,
    )


def record_problems(bundle: Bundle) -> Found:
    """What statuses.py, consistency.py and method.py find in the bundle, listed by check in that order,
    from one pass over its decode records (most break nothing, so the pass is most of the cost)."""
    by_runner, step_tokens, cold_ttft = measured_by_runner(bundle), tokens_per_step(bundle), consistency.cold_ttft(bundle)
    statused: Found = []
    related: Found = []
    ordered: Found = []
    held: Found = []
    for record in records(bundle):
        cell = record.cell
        broken = statuses.record_problems(record)
        if broken:
            statused += record.named(broken)
        if record.window and not record.oversized:
            allowed = for_window(by_runner, cell)
            broken = consistency.window_problems(cell, allowed, step_tokens)
            if broken:
                related += record.named(broken)
            broken = method.window_problems(cell, bundle.run, allowed)
            if broken:
                held += record.named(broken)
        broken = consistency.figure_problems(cell, bundle.measured_at, cold_ttft.get(cell.context_tokens))
        if broken:
            ordered += record.named(broken)
    return [*statused, *statuses.prefill_problems(bundle), *related, *ordered, *consistency.repeat_problems(bundle),
            *consistency.prefill_problems(bundle), *held, *method.prompt_mode_problems(bundle)]
