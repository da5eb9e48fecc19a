"""Label and field selectors: parsing, matching and canonical text, as kube-apiserver does them.

Ported from k8s.io/apimachinery v0.32 pkg/labels/selector.go (the label selector lexer and
parser, `NewRequirement`), pkg/fields/selector.go (field selectors and their escaping) and
pkg/apis/meta/v1/helpers.go + validation (metav1.LabelSelector objects). Query-string syntax
errors raise `errors.bad_request` with upstream's message; an invalid metav1.LabelSelector raises
`InvalidLabelSelectorError`, whose causes feed `errors.invalid(kind, name, causes)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import errors, names

# selection.Operator values.
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)


def _parse_int64(text: str) -> int | None:
    try:
        return names.go_parse_int(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN) and self.key in labels and len(self.values) == 1:
            have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        values = ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({values})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{symbol}{values}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements. `nothing` is labels.Nothing(), what a nil selector object means."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The one value `key` must have (`RequiresExactMatch`), or None."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def _sorted_by_key(reqs: list[LabelRequirement]) -> tuple[LabelRequirement, ...]:
    # Stable, so requirements on one key keep their written order and str() round-trips.
    return tuple(sorted(reqs, key=lambda r: r.key))


def _new_requirement(key: str, op: str, values: tuple[str, ...]) -> LabelRequirement:
    """The checks of `labels.NewRequirement` that the grammar does not already guarantee.

    Raises ValueError with the aggregated field errors, paths relative to the requirement.
    """
    causes = []
    if op in (GREATER_THAN, LESS_THAN):
        causes += [
            names.field_invalid(
                f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"
            )
            for i, v in enumerate(values)
            if _parse_int64(v) is None
        ]
    for i, v in enumerate(values):
        if msgs := names.label_value_errors(v):
            causes.append(names.field_invalid(f"values[{i}][{key}]", v, "; ".join(msgs)))
    if causes:
        raise ValueError(names.render_causes(causes))
    return LabelRequirement(key, op, values)


# -- the label selector lexer and parser (labels.Parse) ----------------------------------------

_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_END = "end"
_IDENT = "identifier"
_KEYWORDS = {IN, NOT_IN}
_SYMBOLS = {"==", "!=", "=", "!", "(", ")", ",", ">", "<"}


def _lex(text: str) -> Iterator[tuple[str, str]]:
    """Yields (kind, literal): kind is the symbol or keyword itself, _IDENT, or _END.

    Like the Go lexer, a NUL character reads as the end of the text where a token would start.
    """
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or text[pos] == "\x00":
            yield _END, ""
            return
        if text[pos] in _SPECIAL:
            two = text[pos : pos + 2]
            lit = two if two in _SYMBOLS else text[pos]
            pos += len(lit)
            if text[pos : pos + 1] == "\x00":
                pos += 1  # Go's read() consumed it
            yield lit, lit
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            if text[pos] == "\x00":
                break
            pos += 1
        lit = text[start:pos]
        if pos < n and text[pos] == "\x00":
            pos += 1  # Go's read() consumed it
        yield (lit if lit in _KEYWORDS else _IDENT), lit


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.items = list(_lex(text))
        self.pos = 0

    def peek(self, *, values: bool = True) -> tuple[str, str]:
        kind, lit = self.items[self.pos]
        # In value context the keywords 'in'/'notin' are plain identifiers.
        return (_IDENT if values and kind in _KEYWORDS else kind), lit

    def take(self, *, values: bool = True) -> tuple[str, str]:
        item = self.peek(values=values)
        self.pos += 1
        return item

    def parse(self) -> list[LabelRequirement]:
        reqs: list[LabelRequirement] = []
        while True:
            kind, lit = self.peek()
            if kind == _END:
                return reqs
            if kind not in (_IDENT, "!"):
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except ValueError as exc:
                raise ValueError(f"unable to parse requirement: {exc}") from None
            kind, lit = self.take()
            if kind == _END:
                return reqs
            if kind != ",":
                raise ValueError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self.peek()
            if kind not in (_IDENT, "!"):
                raise ValueError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> LabelRequirement:
        kind, key = self.take()
        negated = kind == "!"
        if negated:
            kind, key = self.take()
        if kind != _IDENT:
            raise ValueError(f"found '{key}', expected: identifier")
        if msgs := names.qualified_name_errors(key):
            # Upstream validates the key with a nil field path here, hence "<nil>".
            raise ValueError(f"<nil>: {names.field_invalid('', key, '; '.join(msgs)).message}")
        if negated:
            return _new_requirement(key, DOES_NOT_EXIST, ())
        if self.peek()[0] in (_END, ","):
            return _new_requirement(key, EXISTS, ())
        kind, lit = self.take(values=False)
        op = {IN: IN, NOT_IN: NOT_IN, "=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS}.get(kind)
        op = op or {">": GREATER_THAN, "<": LESS_THAN}.get(kind)
        if op is None:
            raise ValueError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self.set_values() if op in (IN, NOT_IN) else self.exact_value()
        return _new_requirement(key, op, tuple(sorted(values)))

    def set_values(self) -> set[str]:
        kind, lit = self.take()
        if kind != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return {""}
        if kind not in (_IDENT, ","):
            raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")
        found: set[str] = set()
        while True:
            kind, lit = self.take()
            if kind == _IDENT:
                found.add(lit)
                nxt, nlit = self.peek()
                if nxt == ")":
                    self.take()
                    return found
                if nxt != ",":
                    raise ValueError(f"found '{nlit}', expected: ',' or ')'")
            elif kind == ",":
                # Empty members: "(,a)", "(a,,b)", "(a,)" all include "".
                if not found or self.peek()[0] in (")", ","):
                    found.add("")
                if self.peek()[0] == ")":
                    self.take()
                    return found
            else:
                raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_END, ","):
            return {""}
        kind, lit = self.take()
        if kind == _IDENT:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the `labelSelector` query syntax; "" selects everything."""
    try:
        reqs = _LabelParser(text).parse()
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    return LabelSelector(_sorted_by_key(reqs))


# -- metav1.LabelSelector objects --------------------------------------------------------------


class InvalidLabelSelectorError(ValueError):
    """A metav1.LabelSelector that upstream validation rejects.

    `causes` carry full field paths; the caller turns them into a 422 with
    `errors.invalid(kind, name, exc.causes)`.
    """

    def __init__(self, causes: list[errors.Cause]) -> None:
        super().__init__(names.render_causes(causes))
        self.causes = causes


_EXPRESSION_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def label_selector_errors(sel: Any, *, path: str = "spec.selector") -> list[errors.Cause]:
    """`ValidateLabelSelector` for a metav1.LabelSelector object (None is valid)."""
    if sel is None:
        return []
    if not isinstance(sel, Mapping):
        return [names.field_type_invalid(path, sel, "an object")]
    causes = names.label_errors(sel.get("matchLabels"), path=f"{path}.matchLabels")
    exprs = sel.get("matchExpressions")
    if exprs is None:
        return causes
    if not isinstance(exprs, list):
        return [*causes, names.field_type_invalid(f"{path}.matchExpressions", exprs, "a list")]
    for i, expr in enumerate(exprs):
        here = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            causes.append(names.field_type_invalid(here, expr, "an object"))
            continue
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            causes.append(names.field_type_invalid(f"{here}.values", values, "a list of strings"))
            values = []
        if op in ("In", "NotIn") and not values:
            causes.append(
                names.field_required(
                    f"{here}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append(
                names.field_forbidden(
                    f"{here}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif op not in _EXPRESSION_OPERATORS:
            causes.append(
                names.field_invalid(f"{here}.operator", op, "not a valid selector operator")
            )
        if not isinstance(key, str):
            causes.append(names.field_type_invalid(f"{here}.key", key, "a string"))
        else:
            causes += [
                names.field_invalid(f"{here}.key", key, m) for m in names.qualified_name_errors(key)
            ]
        for j, value in enumerate(values):
            causes += [
                names.field_invalid(f"{here}.values[{j}]", value, m)
                for m in names.label_value_errors(value)
            ]
    return causes


def label_selector_from_dict(sel: Any, *, path: str = "spec.selector") -> LabelSelector:
    """`LabelSelectorAsSelector`: None selects nothing, {} selects everything.

    Raises InvalidLabelSelectorError (with causes under `path`) when the object is invalid.
    """
    if causes := label_selector_errors(sel, path=path):
        raise InvalidLabelSelectorError(causes)
    if sel is None:
        return NOTHING
    reqs = [LabelRequirement(k, EQUALS, (v,)) for k, v in (sel.get("matchLabels") or {}).items()]
    for expr in sel.get("matchExpressions") or []:
        op = _EXPRESSION_OPERATORS[expr["operator"]]
        reqs.append(LabelRequirement(expr["key"], op, tuple(expr.get("values") or ())))
    return LabelSelector(_sorted_by_key(reqs))


def format_label_selector(sel: Any) -> str:
    """The selector as query text, as Scale.status.selector shows it ("" for everything)."""
    return str(label_selector_from_dict(sel))


# -- field selectors (fields.ParseSelector) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    operator: str  # EQUALS or NOT_EQUALS ("==" parses as EQUALS, as upstream)
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_field_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(r.field for r in self.requirements)

    def matches(self, fields: Mapping[str, str]) -> bool:
        """A field absent from `fields` counts as ""."""
        for r in self.requirements:
            equal = fields.get(r.field, "") == r.value
            if equal != (r.operator == EQUALS):
                return False
        return True

    def single_value(self, field: str) -> str | None:
        """The value an `=` term demands of `field` (`RequiresExactMatch`), for fast paths.

        Other terms may still exclude the object; callers apply `matches` as well.
        """
        for r in self.requirements:
            if r.field == field and r.operator == EQUALS:
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def escape_field_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(text: str) -> str:
    if not any(c in text for c in "\\,="):
        return text
    out: list[str] = []
    escaping = False
    for ch in text:
        if escaping:
            if ch not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaping = False
        elif ch == "\\":
            escaping = True
        elif ch in ",=":
            # Upstream prints the rune with %v, i.e. as its code point number.
            raise ValueError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaping:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start, escaping = 0, False
    for i, ch in enumerate(text):
        if escaping:
            escaping = False
        elif ch == "\\":
            escaping = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_field_selector(text: str) -> FieldSelector:
    """Parse the `fieldSelector` query syntax: `f=v`, `f==v`, `f!=v`, comma-separated.

    Empty terms (trailing commas) and repeated terms are dropped; terms come out sorted.
    """
    found: dict[FieldRequirement, None] = {}
    # Sorted first, as upstream, so that of several bad terms the same one is reported.
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, raw = split
        try:
            value = _unescape_field_value(raw)
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        found[FieldRequirement(field, NOT_EQUALS if op == NOT_EQUALS else EQUALS, value)] = None
    return FieldSelector(tuple(sorted(found, key=str)))
