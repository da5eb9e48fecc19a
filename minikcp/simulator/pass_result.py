"""What one pass of a simulated controller reports to the simulator's queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minikcp.registry.objects import StoredObject

# Queue the object's owner: (kind, object); kind "" means the object's controller.
Enqueue = Callable[[str, StoredObject], None]


@dataclass(slots=True)
class PassResult:
    """How many writes a pass made, whether it can take another step at once, and when it is
    next due (a pod becoming Ready, a job's pod finishing, a schedule)."""

    writes: int = 0
    again: bool = False
    next_at: float | None = None

    def due(self, at: float | None) -> None:
        if at is not None and (self.next_at is None or at < self.next_at):
            self.next_at = at
