"""The model's serializer of item values (bench/scale/serializing.py) answers exactly as boto3's
TypeSerializer, which the store uses, for every value: the kinds it takes itself and those it hands
on, refusals included."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from bench.scale.serializing import FastSerializer

BOTO3 = TypeSerializer()
FAST = FastSerializer()

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.text(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.binary(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.sets(st.text(max_size=5), min_size=1, max_size=3),
        st.sets(st.integers(), min_size=1, max_size=3),
    ),
    max_leaves=12,
)


def _either(serializer: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", serializer.serialize(value)
    except Exception as exc:  # a refusal must be the same refusal
        return "refused", (type(exc), str(exc))


@given(VALUES)
def test_every_value_is_serialized_as_boto3_serializes_it(value: Any) -> None:
    assert _either(FAST, value) == _either(BOTO3, value)


@pytest.mark.parametrize(
    "value",
    [
        10**38 - 1,
        10**38,
        -(10**38),
        True,
        0,
        "",
        [],
        {},
        Decimal("1.50"),
        Binary(b"x"),
        bytearray(b"y"),
        1.5,
        {"a": [1, {"b": None}]},
        frozenset({"s"}),
    ],
)
def test_edges(value: Any) -> None:
    assert _either(FAST, value) == _either(BOTO3, value)
