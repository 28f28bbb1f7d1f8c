"""scrub checks each distinct string before walking a bundle's structs: its result is always the walk's own."""

from __future__ import annotations

import msgspec

from runner.bundle.redact import REDACTED, redact_fields
from runner.bundle.schema import decode_bundle, encode_bundle
from sitegen.content.loader import scrub
from tests.builders import make_bundle

# A bundle whose one secret is redacted already (in its launch command).
CLEAN = make_bundle()


def test_a_bundle_without_secrets_comes_back_as_it_is() -> None:
    bundle = decode_bundle(encode_bundle(CLEAN))
    assert scrub(bundle) is bundle and redact_fields(bundle) == bundle


def test_a_secret_anywhere_is_redacted_as_the_walk_redacts_it() -> None:
    raw = msgspec.json.decode(encode_bundle(CLEAN))
    raw["engine"]["version"] = "0.9 --api-key sk-live-0123456789abcdefXYZ"
    raw["decode"][-1]["error"] = "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx rejected"
    bundle = decode_bundle(msgspec.json.encode(raw))
    cleaned = scrub(bundle)
    assert cleaned == redact_fields(bundle) and cleaned != bundle
    text = msgspec.json.encode(cleaned).decode()
    assert "sk-live" not in text and "hf_abcdef" not in text and text.count(REDACTED) >= 2
