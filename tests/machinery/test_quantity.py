"""Quantity parsing, arithmetic and canonical printing, against apimachinery's own cases."""

from __future__ import annotations

import pytest

from minikcp.machinery import quantity


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("0", "0"),
        ("1", "1"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("0.5", "500m"),
        ("100m", "100m"),
        ("1.5m", "1500u"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("512", "512"),
        ("1Ki", "1Ki"),
        ("0.5Ki", "512"),
        ("2048", "2048"),
        ("1e3", "1e3"),
        ("1E6", "1e6"),
        ("12e2", "1200"),
        ("1G", "1G"),
        ("1000M", "1G"),
        ("-1", "-1"),
        ("-100m", "-100m"),
        ("1n", "1n"),
        ("0.1n", "1n"),
        (" 2 ", "2"),
        ("+3", "3"),
        (".5", "500m"),
        ("5.", "5"),
    ],
)
def test_parse_and_print(text: str, printed: str) -> None:
    assert str(quantity.parse(text)) == printed


@pytest.mark.parametrize("text", ["", "abc", "1x", "1Kib", "--1", ".", "1.2.3", "e3"])
def test_bad_quantities(text: str) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


def test_suffix_error_message() -> None:
    with pytest.raises(quantity.QuantityError, match="unable to parse quantity's suffix"):
        quantity.parse("1Mk")


def test_numbers_from_json() -> None:
    assert str(quantity.parse(3)) == "3"
    assert str(quantity.parse(0.25)) == "250m"


@pytest.mark.parametrize(
    ("a", "b", "total"),
    [
        ("512Mi", "512Mi", "1Gi"),
        ("500m", "500m", "1"),
        ("1", "500m", "1500m"),
        ("0", "1Gi", "1Gi"),  # a zero receiver takes the other's format
        ("1Gi", "1", "1073741825"),
        ("100Mi", "100Mi", "200Mi"),
    ],
)
def test_add(a: str, b: str, total: str) -> None:
    assert str(quantity.parse(a) + quantity.parse(b)) == total


def test_compare_and_values() -> None:
    one, half = quantity.parse("1"), quantity.parse("500m")
    assert half < one and one >= half and not one < half
    assert quantity.parse("1.1").int_value() == 2
    assert quantity.parse("1500m").milli_value() == 1500
    assert str(quantity.parse("1") - quantity.parse("1")) == "0"
    assert str(quantity.parse("2").times(3)) == "6"
