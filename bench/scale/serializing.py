"""DynamoDB's item values as boto3's TypeSerializer makes them, faster for the kinds a job's item
holds (strings, whole numbers, booleans, None, maps and lists of them): the store serializes every
item it writes, and boto3's serializer was two fifths of the host's time to build a job's item
before a run, a million of them for a million jobs due. Any other
value (a Decimal, bytes, a set, a number of more digits than DynamoDB keeps) goes to boto3's own
serializer, so every answer is boto3's (tests/bench/test_scale_serializing.py)."""

from __future__ import annotations

from typing import Any, cast

from boto3.dynamodb.types import TypeSerializer

# Off where the host's CPU is measured on the engine's own path, as the CPU table is
# (bench/scale/cpu.py): with the CPU measured, or when the table is checked against this host.
FAST = True
# The largest whole number DynamoDB's 38 digits hold exactly: boto3 refuses more (Inexact).
_MOST = 10**38


class FastSerializer:
    def __init__(self) -> None:
        self._boto3 = TypeSerializer()

    def serialize(self, value: Any) -> dict[str, Any]:
        kind = type(value)
        if kind is str:
            return {"S": value}
        if kind is int and -_MOST < value < _MOST:
            return {"N": str(value)}
        if kind is bool:
            return {"BOOL": value}
        if value is None:
            return {"NULL": True}
        if kind is dict:
            return {"M": {name: self.serialize(inner) for name, inner in value.items()}}
        if kind is list or kind is tuple:
            return {"L": [self.serialize(inner) for inner in value]}
        return cast(dict[str, Any], self._boto3.serialize(value))
