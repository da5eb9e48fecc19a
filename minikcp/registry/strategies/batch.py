"""Strategies of kinds whose only difference is generation tracking or a small status."""

from __future__ import annotations

from typing import Any

from minikcp.registry import strategy


class GenerationStrategy(strategy.Strategy):
    tracks_generation = True


class JobStrategy(strategy.Strategy):
    tracks_generation = True
    extra_selectable_fields = frozenset({"status.successful"})

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {}
