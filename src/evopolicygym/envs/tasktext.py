"""Task texts: the required Markdown sections, parsing them, and the generated family template
used for bulk ids that have no hand-written text."""

from __future__ import annotations

import re
from typing import Any

from ._spec import EnvSpec
from .families import FAMILIES

__all__ = ["REQUIRED_SECTIONS", "missing_sections", "schema_summary", "sections", "template_task"]

REQUIRED_SECTIONS = (
    "Objective",
    "Policy Interface",
    "Observation",
    "Action",
    "Reward",
    "Episode end",
    "Scoring",
)

_HEADING = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)


def sections(text: str) -> dict[str, str]:
    """Level-2 sections of a Markdown text: heading -> body (stripped)."""
    found: dict[str, str] = {}
    matches = list(_HEADING.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        found[match.group(1)] = text[match.end() : end].strip()
    return found


def missing_sections(text: str) -> list[str]:
    """Required sections that are absent or empty."""
    present = sections(text)
    return [name for name in REQUIRED_SECTIONS if not present.get(name)]


def schema_summary(schema: dict[str, Any], indent: str = "") -> str:
    """A short Markdown description of a space schema."""
    kind = schema.get("type")
    if kind == "Discrete":
        start = schema.get("start", 0)
        text = f"an integer in {start} .. {start + schema['n'] - 1} (`Discrete`, n = {schema['n']})"
        if "labels" in schema:
            named = ", ".join(f"`{start + i}` {label}" for i, label in enumerate(schema["labels"]))
            text += f": {named}"
        return text
    if kind == "Box":
        return f"a nested list of numbers of shape {schema['shape']} (`Box`, {schema['dtype']})"
    if kind == "Image":
        return (
            f"an image of shape {schema['shape']} with values 0 .. 255 (`Image`, "
            "height x width x channels)"
        )
    if kind == "MultiDiscrete":
        return f"a list of integers, one per entry of nvec = {schema['nvec']} (`MultiDiscrete`)"
    if kind == "MultiBinary":
        return f"a list of 0/1 values of size {schema['n']} (`MultiBinary`)"
    if kind == "Text":
        return f"a string of {schema['min_length']} .. {schema['max_length']} characters (`Text`)"
    if kind == "Tuple":
        items = "".join(
            f"\n{indent}- item {i}: {schema_summary(sub, indent + '  ')}"
            for i, sub in enumerate(schema["spaces"])
        )
        return f"a list of {len(schema['spaces'])} items (`Tuple`):{items}"
    if kind == "Dict":
        items = "".join(
            f"\n{indent}- `{key}`: {schema_summary(sub, indent + '  ')}"
            for key, sub in schema["spaces"].items()
        )
        return f"an object (`Dict`) with keys:{items}"
    return f"a `{kind}` value (see the schema's `repr`)"


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", ":")) or "\n" in text else text + "."


def template_task(spec: EnvSpec, obs_schema: dict[str, Any], action_schema: dict[str, Any]) -> str:
    """A complete task text for an environment without a hand-written one."""
    family = FAMILIES.get(spec.family, FAMILIES["other"])
    storage = (
        "\n\nImage observations are also saved in `observations.npy`/`.npz` in the feedback."
        if spec.obs_storage == "external"
        else ""
    )
    return f"""# {spec.upstream or spec.id}

EvoPolicyGym id `{spec.id}`, Gymnasium `{spec.upstream}`, at most {spec.max_episode_steps} steps per
episode. Family: {family.title}. {family.blurb} This text is generated from the family template;
the upstream project's documentation of `{spec.upstream}` describes the task in detail.

## Objective
Maximize the episode return of `{spec.upstream}`.

## Policy Interface
`system/policy.py` defines `class Policy` with `__init__(self, obs_space, action_space, env_meta)`,
`reset(self, episode_index)` (called before every episode) and `act(self, obs)` (called every step,
returns the action). `obs_space` and `action_space` are the schemas summarized below.

## Observation
{_sentence(schema_summary(obs_schema))}{storage}

## Action
{_sentence(schema_summary(action_schema))} Out-of-range or malformed actions are clipped or replaced and
flagged with `info.action_invalid`.

## Reward
{_sentence(spec.reward)}

## Episode end
When the environment terminates or truncates the episode, and at the latest after
{spec.max_episode_steps} steps ({spec.step_cap_source}).

## Scoring
The score is the mean return over hidden held-out cases of the checkpoint with the best mean
return on hidden validation cases. Only your train episodes are reported to you.
"""
