"""Helpers for the kubectl output scenarios: versioned binaries, table parsing, streaming output."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.server_process import ServerProcess

# Every kubectl minor the machine may carry; 1.32+ send protobuf bodies.
ALL_VERSIONS = ("1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
# The default `kubectl` (the dispatcher runs 1.32 against minor 32) plus an older and a newer one.
TABLE_BINARIES = ("kubectl", "kubectl.1.29", "kubectl.1.33")


def kubectl_binary(name: str) -> str | None:
    """`kubectl` or `kubectl.<minor>`: on PATH or beside the real file of the dispatcher."""
    found = shutil.which(name)
    if found:
        return found
    dispatcher = shutil.which("kubectl")
    if dispatcher:
        candidate = Path(dispatcher).resolve().parent / name
        if candidate.exists():
            return str(candidate)
    return None


def require_binary(name: str) -> str:
    found = kubectl_binary(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


@dataclass
class Table:
    header: list[str]
    rows: list[dict[str, str]]

    def column(self, name: str) -> list[str]:
        return [row[name] for row in self.rows]

    def row(self, column: str, value: str) -> dict[str, str]:
        found = [r for r in self.rows if r[column] == value]
        assert len(found) == 1, f"no single row with {column}={value!r} in {self.rows}"
        return found[0]


_GAP = re.compile(r"\S+(?: \S+)*")


def parse_table(text: str) -> Table:
    """One kubectl table: cells are cut at the header's column offsets, so empty cells survive.

    kubectl pads every column to its widest cell plus three spaces, so a header name (which may
    hold single spaces, "NOMINATED NODE") starts where each of its cells starts.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "empty table"
    spans = [(m.start(), m.group()) for m in _GAP.finditer(lines[0])]
    header = [name for _, name in spans]
    rows = []
    for line in lines[1:]:
        cells = {}
        for i, (start, name) in enumerate(spans):
            end = spans[i + 1][0] if i + 1 < len(spans) else len(line)
            cells[name] = line[start:end].strip()
        rows.append(cells)
    return Table(header, rows)


def parse_tables(text: str) -> list[Table]:
    """The tables of a multi-type `kubectl get`, which separates them with a blank line."""
    blocks = [b for b in re.split(r"\n\s*\n", text.strip("\n")) if b.strip()]
    return [parse_table(b) for b in blocks]


class StreamedOutput:
    """A long-running kubectl whose stdout lines are read as they come (e.g. `get -w`)."""

    def __init__(self, server: ServerProcess, cluster: str, binary: str, *args: str) -> None:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(server.home),
            "KUBECONFIG": str(server.kubeconfig(cluster)),
        }
        self.process = subprocess.Popen(
            [binary, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout: float = 15) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout}s") from None

    def stop(self) -> str:
        """Stops the process; returns its stderr."""
        self.process.kill()
        _, err = self.process.communicate(timeout=10)
        self._reader.join(timeout=5)
        return err

    def __enter__(self) -> StreamedOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.stop()
