"""Kubernetes resource quantities (apimachinery `resource.Quantity`): parse, compare, add, print.

A quantity is an exact rational value (rounded up to nano units at parse, as upstream does) and
the format it was written in (DecimalSI, BinarySI, DecimalExponent), which decides how `str`
prints it: `canonical` follows `Quantity.CanonicalizeBytes`, so sums read as upstream's
messages do (`512Mi` + `512Mi` is `1Gi`, `500m` + `500m` is `1`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY.items()}
_NUMBER = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
_NANO = Fraction(1, 10**9)
# Upstream refuses exponents it cannot hold in an int32 scale; far smaller values already
# overflow what a quantity means, so a bound keeps Fraction arithmetic cheap.
_MAX_EXPONENT = 100


class QuantityError(ValueError):
    """Text that is not a quantity; the message is upstream's (`ErrFormatWrong`/`ErrSuffix`)."""


FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_WRONG = "unable to parse quantity's suffix"


@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    format: str = DECIMAL_SI

    def __str__(self) -> str:
        return canonical(self)

    def __add__(self, other: Quantity) -> Quantity:
        # Quantity.Add keeps the receiver's format unless the receiver is zero.
        a, b = self.value, other.value
        fmt = other.format if a.numerator == 0 else self.format
        if a.denominator == 1 and b.denominator == 1:
            return Quantity(Fraction(a.numerator + b.numerator), fmt)  # whole numbers, cheaply
        return Quantity(a + b, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value - other.value, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.value, self.format)

    # Comparisons by cross-multiplication: Fraction's own go through the numbers ABCs, and
    # quota admission compares on every create.
    def _cmp_terms(self, other: Quantity) -> tuple[int, int]:
        a, b = self.value, other.value
        return a.numerator * b.denominator, b.numerator * a.denominator

    def __lt__(self, other: Quantity) -> bool:
        x, y = self._cmp_terms(other)
        return x < y

    def __le__(self, other: Quantity) -> bool:
        x, y = self._cmp_terms(other)
        return x <= y

    def __gt__(self, other: Quantity) -> bool:
        x, y = self._cmp_terms(other)
        return x > y

    def __ge__(self, other: Quantity) -> bool:
        x, y = self._cmp_terms(other)
        return x >= y

    @property
    def sign(self) -> int:
        n = self.value.numerator
        return (n > 0) - (n < 0)

    def times(self, factor: int) -> Quantity:
        return Quantity(self.value * factor, self.format)

    def int_value(self) -> int:
        """`Value()`: rounded up to a whole number."""
        return math.ceil(self.value)

    def milli_value(self) -> int:
        """`MilliValue()`: thousandths, rounded up."""
        return math.ceil(self.value * 1000)


ZERO = Quantity(Fraction(0), DECIMAL_SI)
ONE = Quantity(Fraction(1), DECIMAL_SI)


def parse(text: object) -> Quantity:
    """`ParseQuantity` of a string (or a JSON number); raises QuantityError."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(FORMAT_WRONG)
    if not isinstance(text, str):
        text = repr(text) if isinstance(text, float) else str(text)
    text = text.strip()
    m = _NUMBER.match(text)
    if not text or m is None:
        raise QuantityError(FORMAT_WRONG)
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3), m.group(4)
    if not whole and not frac:
        raise QuantityError(FORMAT_WRONG)
    digits = Fraction(int(whole or "0"))
    if frac:
        digits += Fraction(int(frac), 10 ** len(frac))
    if suffix in _BINARY:
        fmt, scale = BINARY_SI, Fraction(2 ** _BINARY[suffix])
    elif suffix in _DECIMAL:
        fmt, scale = DECIMAL_SI, _pow10(_DECIMAL[suffix])
    else:
        em = _EXPONENT.match(suffix)
        if em is None:
            if re.fullmatch(r"[eEinumkKMGTP]*[-+]?[0-9]*", suffix):
                raise QuantityError(SUFFIX_WRONG)
            raise QuantityError(FORMAT_WRONG)
        exponent = int(em.group(1))
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(FORMAT_WRONG)
        fmt, scale = DECIMAL_EXPONENT, _pow10(exponent)
    value = digits * scale
    if sign == "-":
        value = -value
    return Quantity(_round_up_nano(value), fmt)


def parse_or_none(text: object) -> Quantity | None:
    try:
        return parse(text)
    except QuantityError:
        return None


def _pow10(exponent: int) -> Fraction:
    return Fraction(10**exponent) if exponent >= 0 else Fraction(1, 10**-exponent)


def _round_up_nano(value: Fraction) -> Fraction:
    """Values finer than 1n round away from zero to the next nano unit (upstream's RoundUp)."""
    if (value / _NANO).denominator == 1:
        return value
    nanos = value / _NANO
    rounded = math.ceil(nanos) if nanos > 0 else math.floor(nanos)
    return rounded * _NANO


def canonical(q: Quantity) -> str:
    """`Quantity.String()` of a quantity without a cached string."""
    value = q.value
    if value == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        amount, exponent = int(value), 0
        while amount % 1024 == 0 and exponent < 60:
            amount //= 1024
            exponent += 10
        return f"{amount}{_BINARY_BY_EXPONENT.get(exponent, '')}"
    mantissa, exponent = _decimal_parts(value)
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_BY_EXPONENT.get(exponent)
    if suffix is None:
        return f"{mantissa}e{exponent}"
    return f"{mantissa}{suffix}"


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """An integer mantissa and an exponent that is a multiple of 3 (`AsCanonicalBytes`)."""
    exponent = 0
    while value.denominator != 1:
        value *= 1000
        exponent -= 3
    mantissa = int(value)
    while mantissa % 1000 == 0 and mantissa != 0:
        mantissa //= 1000
        exponent += 3
    return mantissa, exponent
