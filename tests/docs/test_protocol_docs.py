"""docs/protocol/ against src/evopolicygym/protocol/: the normative text must name every field,
verdict, error kind, limit and version the models define, and its JSON examples must be valid
instances of those models. A field added to a model without documentation fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evopolicygym import protocol
from evopolicygym.protocol import (
    ApiError,
    EnvMeta,
    EpisodeErrorKind,
    ErrorLine,
    InfoResponse,
    LimitsSection,
    Outcome,
    RunRecord,
    RunState,
    SubmitRequest,
    SubmitSummary,
    TrajectoryRow,
    Verdict,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol"


def text(name: str) -> str:
    return (DOCS / name).read_text()


def json_blocks(name: str) -> list[str]:
    return re.findall(r"^```json\n(.*?)^```", text(name), re.M | re.S)


def documented(name: str, word: str) -> bool:
    return f"`{word}`" in text(name) or f"`{word}:" in text(name) or f'"{word}"' in text(name)


@pytest.mark.parametrize("name", sorted(p.name for p in DOCS.glob("*.md")))
def test_json_examples_parse(name):
    for block in json_blocks(name):
        try:
            json.loads(block)
        except json.JSONDecodeError:  # several one-line examples in one block
            for line in block.strip().splitlines():
                json.loads(line)


def test_index_links_every_document():
    index = text("README.md")
    for path in DOCS.glob("*.md"):
        if path.name != "README.md":
            assert f"]({path.name})" in index, f"README.md does not link {path.name}"


def test_info_example_is_a_complete_info_response():
    example = json.loads(json_blocks("http-api.md")[0])
    info = InfoResponse.model_validate(example)
    assert set(example) == set(InfoResponse.model_fields)
    assert set(example["state"]) == set(RunState.model_fields)
    assert set(example["env_meta"]) == set(EnvMeta.model_fields)
    assert info.protocol_version == protocol.PROTOCOL_VERSION
    assert info.schema_version == protocol.SCHEMA_VERSION
    # The example shows the default limits.
    assert info.resource_limits.model_dump() == LimitsSection().model_dump()


def test_submit_body_examples_are_valid_requests():
    for line in json_blocks("http-api.md")[1].strip().splitlines():
        body = SubmitRequest.model_validate_json(line)
        assert protocol.parse_env_instances(body.env_instances) == [0, 1, 2, 7]


def test_error_body_example_and_every_error_code():
    example = json.loads(json_blocks("http-api.md")[2])
    ApiError.model_validate(example)
    codes = re.findall(r"``(\w+)``", ApiError.__doc__)
    assert codes, "ApiError's docstring lists the codes"
    for code in codes:
        assert documented("http-api.md", code), f"http-api.md does not document {code}"


def test_run_json_example_is_a_run_record():
    example = json.loads(json_blocks("artifacts.md")[0])
    record = RunRecord.model_validate(example)
    assert set(example) == set(RunRecord.model_fields)
    assert record.schema_version == protocol.SCHEMA_VERSION
    assert record.harness_version == protocol.HARNESS_VERSION


@pytest.mark.parametrize(
    ("model", "name"),
    [
        (SubmitSummary, "feedback.md"),
        (ErrorLine, "feedback.md"),
        (TrajectoryRow, "feedback.md"),
        (Outcome, "scoring.md"),
        (LimitsSection, "seeds-and-isolation.md"),
        (RunRecord, "artifacts.md"),
    ],
)
def test_every_model_field_is_documented(model, name):
    missing = [field for field in model.model_fields if not documented(name, field)]
    assert not missing, f"{name} does not document {model.__name__} fields {missing}"


def test_every_verdict_and_episode_error_is_documented():
    for verdict in Verdict:
        assert documented("submit-lifecycle.md", verdict.value), verdict
    for kind in EpisodeErrorKind:
        assert documented("feedback.md", kind.value), kind
        assert documented("policy-interface.md", kind.value) or kind in (
            EpisodeErrorKind.ENV_ERROR,
        ), kind


def test_versions_match_the_code():
    versions = text("versioning.md")
    assert f"`{protocol.PROTOCOL_VERSION}`" in versions
    assert f"`{protocol.SCHEMA_VERSION}`" in versions
    assert f"`{protocol.HARNESS_VERSION}`" in versions
    assert protocol.PROTOCOL_VERSION in text("README.md")


def test_limit_defaults_in_the_table_match_the_code():
    table = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `(\w+)` \| ([^|]+?) \|", text("seeds-and-isolation.md"), re.M)
    }
    units = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10}
    for field, default in LimitsSection().model_dump().items():
        number, _, unit = table[field].partition(" ")
        assert float(number) * units.get(unit, 1) == default, f"{field}: doc {table[field]!r}"
