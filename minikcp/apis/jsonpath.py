"""The kubectl/client-go JSONPath dialect, compiled once and evaluated against JSON objects.

CRD `additionalPrinterColumns` are evaluated with k8s.io/client-go/util/jsonpath with missing keys
allowed; this is a port of its parser and evaluator for one template action (`{...}`): fields
(`.a.b`, `a\\.b` escapes, `['key']`), wildcards, recursive descent, indexes and slices, unions, and
filters (`[?(@.type=="Ready")]`, comparisons `== != < > <= >=`, existence). `range`/`end` are
parsed but not evaluated. Evaluation errors (indexing a non-list, an out-of-range index, comparing
unlike types) raise `JSONPathError`, as the upstream evaluator returns an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["JSONPath", "JSONPathError", "compile_path"]


class JSONPathError(ValueError):
    """A template that does not parse, or an evaluation the upstream evaluator refuses."""


# --- nodes --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Field:
    name: str


@dataclass(frozen=True, slots=True)
class _Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class _Recursive:
    pass


@dataclass(frozen=True, slots=True)
class _Slice:
    start: int | None  # None: not given
    end: int | None
    step: int | None
    derived_end: bool  # `[n]`: end is n+1


@dataclass(frozen=True, slots=True)
class _Union:
    branches: tuple[tuple[_Node, ...], ...]


@dataclass(frozen=True, slots=True)
class _Filter:
    left: tuple[_Node, ...]
    operator: str  # "exists" or a comparison
    right: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Literal:
    value: Any  # str, int, float or bool: evaluates to itself for every input


@dataclass(frozen=True, slots=True)
class _Identifier:
    name: str


_Node = _Field | _Wildcard | _Recursive | _Slice | _Union | _Filter | _Literal | _Identifier

# --- parser -------------------------------------------------------------------------------------

_TERMINATORS: Final = frozenset(" \t\r\n.,[]$@{}")
_DICT_KEY: Final = re.compile(r"^'([^']*)'$")
_SLICE: Final = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER: Final = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)
_NUMBER_CHARS: Final = frozenset("0123456789.")
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def actions(self) -> list[tuple[_Node, ...]]:
        """Every `{...}` action of the template, in order (text between them is ignored)."""
        found: list[tuple[_Node, ...]] = []
        while True:
            start = self.text.find("{", self.pos)
            if start < 0:
                return found
            self.pos = start + 1
            found.append(tuple(self._inside_action()))

    def _inside_action(self) -> list[_Node]:
        nodes: list[_Node] = []
        text = self.text
        while True:
            rest = text[self.pos :]
            if rest.startswith("}"):
                self.pos += 1
                return nodes
            if rest.startswith("[?("):
                self.pos += 3
                nodes.append(self._filter())
                continue
            if rest.startswith(".."):
                if nodes and isinstance(nodes[-1], _Recursive):
                    raise JSONPathError("invalid multiple recursive descent")
                self.pos += 2
                nodes.append(_Recursive())
                if self.pos < len(text) and _is_alphanumeric(text[self.pos]):
                    nodes.append(self._field())
                continue
            if not rest or rest[0] in "\r\n":
                raise JSONPathError("unclosed action")
            char = rest[0]
            self.pos += 1
            if char in " @$":
                continue
            if char == "[":
                nodes.extend(self._array())
            elif char in "\"'":
                nodes.append(_Literal(self._quoted(char)))
            elif char == ".":
                nodes.append(self._field())
            elif char in "+-" or char.isdigit():
                self.pos -= 1
                nodes.append(self._number())
            elif _is_alphanumeric(char):
                self.pos -= 1
                nodes.append(self._identifier())
            else:
                raise JSONPathError(f"unrecognized character in action: {char!r}")

    def _field(self) -> _Node:
        text, start = self.text, self.pos
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char in _TERMINATORS:
                break
            else:
                self.pos += 1
        value = text[start : self.pos]
        return _Wildcard() if value == "*" else _Field(value.replace("\\", ""))

    def _identifier(self) -> _Node:
        text, start = self.text, self.pos
        while self.pos < len(text) and text[self.pos] not in _TERMINATORS:
            self.pos += 1
        value = text[start : self.pos]
        if value in ("true", "false"):
            return _Literal(value == "true")
        return _Identifier(value)

    def _number(self) -> _Node:
        text, start = self.text, self.pos
        if text[self.pos] in "+-":
            self.pos += 1
        while self.pos < len(text) and text[self.pos] in _NUMBER_CHARS:
            self.pos += 1
        value = text[start : self.pos]
        try:
            return _Literal(int(value))
        except ValueError:
            pass
        try:
            return _Literal(float(value))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def _quoted(self, quote: str) -> str:
        text, start = self.text, self.pos
        while True:
            if self.pos >= len(text) or text[self.pos] == "\n":
                raise JSONPathError("unterminated quoted string")
            char = text[self.pos]
            self.pos += 1
            if char == quote and text[self.pos - 2] != "\\":
                break
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), text[start : self.pos - 1])

    def _array(self) -> list[_Node]:
        end = self.text.find("]", self.pos)
        newline = self.text.find("\n", self.pos)
        if end < 0 or 0 <= newline < end:
            raise JSONPathError("unterminated array")
        inner = self.text[self.pos : end]
        self.pos = end + 1
        if inner == "*":
            inner = ":"
        parts = inner.split(",")
        if len(parts) > 1:
            return [_Union(tuple(_sub_action(f"[{p.strip(' ')}]") for p in parts))]
        key = _DICT_KEY.match(inner)
        if key:
            return list(_sub_action("." + key[1]))
        match = _SLICE.match(inner)
        if match is None:
            raise JSONPathError(f"invalid array index {inner}")
        start_text, end_text, step_text = match[1], match[2], match[3]
        start = int(start_text) if start_text not in ("", "-") else None
        if start_text == "-":
            raise JSONPathError(f"array index {start_text} is not a number")
        if end_text is None:
            return [_Slice(start, (start or 0) + 1, None, derived_end=True)]
        stop = _optional_int(end_text[1:])
        step = _optional_int(step_text[1:]) if step_text else None
        return [_Slice(start, stop, step, derived_end=False)]

    def _filter(self) -> _Node:
        text, start = self.text, self.pos
        opened = closed = False
        pair = ""
        while True:
            if self.pos >= len(text) or text[self.pos] == "\n":
                raise JSONPathError("unterminated filter")
            char = text[self.pos]
            self.pos += 1
            if char in "\"'":
                if not opened:
                    opened, pair = True, char
                elif char == pair and text[self.pos - 2] != "\\":
                    closed = True
            elif char == ")" and opened == closed:
                break
        if self.pos >= len(text) or text[self.pos] != "]":
            raise JSONPathError("unclosed array expect ]")
        self.pos += 1
        expression = text[start : self.pos - 2]
        match = _FILTER.match(expression)
        if match is None:
            return _Filter(_sub_action(expression), "exists", ())
        return _Filter(_sub_action(match[1]), match[2], _sub_action(match[3]))


def _optional_int(text: str) -> int | None:
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise JSONPathError(f"array index {text} is not a number") from None


def _sub_action(text: str) -> tuple[_Node, ...]:
    actions = _Parser("{" + text + "}").actions()
    return actions[0] if actions else ()


def _is_alphanumeric(char: str) -> bool:
    return char == "_" or char.isalnum()


# --- evaluation ---------------------------------------------------------------------------------
# Nodes compile to steps (list of values in, list of values out) once; rows then only run steps.

Step = Callable[[list[Any]], list[Any]]
ItemEval = Callable[[Any], list[Any]]


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return value
    return []


def _fields_step(names: tuple[str, ...]) -> Step:
    # A run of fields maps each value to zero or one result, so it can walk value by value.
    def step(values: list[Any]) -> list[Any]:
        out = []
        for value in values:
            for name in names:
                if isinstance(value, dict) and name in value:
                    value = value[name]
                else:
                    break
            else:
                out.append(value)
        return out

    return step


def _slice_step(node: _Slice) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{type(value).__name__} is not array or slice")
            length = len(value)
            start = node.start or 0
            if start < 0:
                start += length
            stop = length if node.end is None else node.end
            if stop < 0 or (stop == 0 and node.derived_end):
                stop += length
            if stop == start:
                return out  # asking for nothing is allowed, and (upstream) ends the evaluation
            if not 0 <= start < length or not 0 <= stop <= length:
                raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
            if start > stop:
                raise JSONPathError(f"starting index {start} is greater than ending index {stop}")
            step = 1 if node.step is None else node.step
            if step <= 0:
                raise JSONPathError("step must be > 0")
            out.extend(value[start:stop:step])
        return out

    return step


# text/template's basic kinds; JSON decoding gives exactly these types.
_KINDS: Final[dict[type, str]] = {bool: "bool", int: "int", float: "float", str: "string"}


def _compare(operator: str, left: Any, right: Any) -> bool:
    kind = _KINDS.get(type(left))
    if kind is None or kind != _KINDS.get(type(right)):
        raise JSONPathError("incompatible types for comparison")
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if kind == "bool":
        raise JSONPathError("invalid type for comparison")
    if operator == "<":
        return bool(left < right)
    if operator == ">":
        return bool(left > right)
    if operator == "<=":
        return bool(left <= right)
    if operator == ">=":
        return bool(left >= right)
    raise JSONPathError(f"unrecognized filter operator {operator}")


def _item_eval(nodes: tuple[_Node, ...]) -> ItemEval:
    """Evaluate a filter side against one list item."""
    if len(nodes) == 1 and isinstance(nodes[0], _Literal):
        constant = [nodes[0].value]
        return lambda item: constant
    steps = _compile(nodes)
    return lambda item: _run(steps, [item])


def _filter_step(node: _Filter) -> Step:
    left, right, operator = _item_eval(node.left), _item_eval(node.right), node.operator

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(f"{value!r} is not array or slice and cannot be filtered")
            for item in value:
                if operator == "exists":
                    try:
                        if left(item):
                            out.append(item)
                    except JSONPathError:  # upstream ignores errors when testing existence
                        pass
                    continue
                lefts = left(item)
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = right(item)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(operator, lefts[0], rights[0]):
                    out.append(item)
        return out

    return step


def _recursive(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        children = _children(value)
        if children:
            out.append(value)
            out.extend(_recursive(children))
    return out


def _union_step(node: _Union) -> Step:
    branches = [_compile(branch) for branch in node.branches]
    return lambda values: [r for steps in branches for r in _run(steps, values)]


def _literal_step(node: _Literal) -> Step:
    # Upstream yields a quoted text once, and a number or boolean once per input.
    if isinstance(node.value, str):
        text = [node.value]
        return lambda values: text
    return lambda values: [node.value] * len(values)


def _identifier_step(node: _Identifier) -> Step:
    def step(values: list[Any]) -> list[Any]:
        raise JSONPathError(f"unsupported identifier {node.name}")

    return step


def _compile(nodes: Sequence[_Node]) -> tuple[Step, ...]:
    steps: list[Step] = []
    fields: list[str] = []
    for node in nodes:
        if isinstance(node, _Field):
            fields.append(node.name)
            continue
        if fields:
            steps.append(_fields_step(tuple(fields)))
            fields = []
        if isinstance(node, _Slice):
            steps.append(_slice_step(node))
        elif isinstance(node, _Filter):
            steps.append(_filter_step(node))
        elif isinstance(node, _Wildcard):
            steps.append(lambda values: [c for v in values for c in _children(v)])
        elif isinstance(node, _Recursive):
            steps.append(lambda values: _recursive([v for v in values if v is not None]))
        elif isinstance(node, _Union):
            steps.append(_union_step(node))
        elif isinstance(node, _Literal):
            steps.append(_literal_step(node))
        else:
            steps.append(_identifier_step(node))
    if fields:
        steps.append(_fields_step(tuple(fields)))
    return tuple(steps)


def _run(steps: tuple[Step, ...], values: list[Any]) -> list[Any]:
    for step in steps:
        values = step(values)
    return values


# --- public -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JSONPath:
    """A compiled template; `find(obj)` returns the first action's results (maybe empty)."""

    source: str
    steps: tuple[Step, ...]

    def find(self, obj: Any) -> list[Any]:
        return _run(self.steps, [obj])


def compile_path(path: str) -> JSONPath:
    """Compile a CRD column's `jsonPath` (it is wrapped in `{}` as the CRD convertor does)."""
    actions = _Parser("{" + path + "}").actions()
    return JSONPath(path, _compile(actions[0] if actions else ()))
