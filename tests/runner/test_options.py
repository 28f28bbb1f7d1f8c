"""Token counts and lists as the command line takes them (8K, 1019k, 16K,8K)."""

from __future__ import annotations

import re

import pytest

from runner.errors import OptionError
from runner.options import parse_list, parse_tokens


def test_parse_tokens_and_lists() -> None:
    assert parse_tokens("8K") == 8192
    assert parse_tokens("1019k") == 1043456
    assert parse_tokens("3000") == 3000
    assert parse_list("16K,8K,8K") == [8192, 16384]
    assert parse_list(" 8K , 1K ") == [1024, 8192]
    with pytest.raises(OptionError):
        parse_tokens("eight")
    for text in ("8K,,16K", "8K,", ",8K", "8K, ,16K"):
        with pytest.raises(OptionError, match=f"empty item in {re.escape(repr(text))}"):
            parse_list(text)
