"""The client's logged-out judge gives every verdict of the cases the daemon's judge is tested on
(`Tests/EgressTests/Fixtures/logged-out-answers.json`, read by EgressTests' LoggedOutSharedCasesTests too): one
rule as the daemon hands it out, the same answer in both."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import pytest

from sessionkeeper import LoggedOutRule

from conftest import ROOT

CASES_FILE = os.path.join(ROOT, "Tests", "EgressTests", "Fixtures", "logged-out-answers.json")


def load_cases() -> List[Dict[str, Any]]:
    with open(CASES_FILE, encoding="utf-8") as file:
        cases: List[Dict[str, Any]] = json.load(file)["cases"]
    return cases


@pytest.mark.parametrize("case", load_cases(), ids=lambda case: str(case["what"]))
def test_the_clients_judge_gives_every_verdict(case):
    rule = LoggedOutRule.from_json(case["rule"])
    for answer in case["answers"]:
        body = None
        if "body" in answer:
            body = b" " * answer.get("body_padding", 0) + answer["body"].encode("utf-8")
        encoding = [answer["content_encoding"]] if "content_encoding" in answer else []
        verdict = rule.judge(answer["status"], answer["url"], answer.get("location"), body,
                             answer.get("method", "GET"), encoding)
        assert verdict == answer["verdict"], f"{case['what']}: {answer.get('method', 'GET')} {answer['url']} {answer['status']}"
