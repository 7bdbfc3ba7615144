import pytest

from evopolicygym.protocol import (
    InstanceSpecError,
    SubmitRequest,
    TooManyInstances,
    count_env_instances,
    parse_env_instances,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([3, 1, 3], [3, 1, 3]),
        ("0-3,7", [0, 1, 2, 3, 7]),
        (" 5 , 5 ", [5, 5]),
        ("5-7,6-8", [5, 6, 7, 6, 7, 8]),
        ("4-4", [4]),
    ],
)
def test_valid_specs_expand_in_order_with_duplicates(value, expected):
    assert parse_env_instances(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        " ",
        "1,,2",
        "3-1",
        "a",
        "1-2-3",
        "-1",
        "1 - 2",
        [True],
        [-1],
        [1.0],
        ["1"],
        7,
        None,
        {"a": 1},
        "\u0663",
        "1\u0663",
        "\uff11",
        "1_000",
        "\u00a01",
        "12345678901",
        [10**10],
        [10**5000],
    ],
)
def test_invalid_specs_are_refused_with_a_reason(value):
    with pytest.raises(InstanceSpecError) as info:
        parse_env_instances(value)
    assert str(info.value)


def test_huge_ranges_are_counted_not_expanded():
    assert count_env_instances("0-9999999999,5") == 10**10 + 1
    with pytest.raises(TooManyInstances, match="names 10000000001 ids") as info:
        parse_env_instances("0-9999999999,5")
    assert info.value.count == 10**10 + 1
    assert parse_env_instances("0-3", limit=4) == [0, 1, 2, 3]
    with pytest.raises(TooManyInstances):
        parse_env_instances([1, 2, 3], limit=2)


def test_submit_request_refuses_what_parsing_refuses_with_the_same_reason():
    assert SubmitRequest.model_validate({"env_instances": "0-2"}).env_instances == "0-2"
    assert SubmitRequest.model_validate({"env_instances": [0, 2]}).env_instances == [0, 2]
    for bad, reason in (([True], "True"), ("\u0663", "ASCII"), ([1, "2"], "'2'")):
        with pytest.raises(ValueError, match=reason):
            SubmitRequest.model_validate({"env_instances": bad})
