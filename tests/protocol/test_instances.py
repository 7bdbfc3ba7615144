import pytest

from evopolicygym.protocol import InstanceSpecError, parse_env_instances


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
    ],
)
def test_invalid_specs_are_refused_with_a_reason(value):
    with pytest.raises(InstanceSpecError) as info:
        parse_env_instances(value)
    assert str(info.value)


def test_huge_ranges_are_refused_before_expanding():
    with pytest.raises(InstanceSpecError, match="more than"):
        parse_env_instances("0-99999999999")
