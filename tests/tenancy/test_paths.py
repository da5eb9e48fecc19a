"""Workspace paths, logical cluster names and the plugin's URL and kubeconfig handling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from minikcp.cli import ws
from minikcp.tenancy import paths


def test_new_cluster_names_are_kcp_shaped_and_distinct() -> None:
    made = {paths.new_cluster_name() for _ in range(2000)}
    assert len(made) == 2000
    assert all(re.fullmatch(r"[0-9a-z]{16}", name) for name in made)


@pytest.mark.parametrize(
    ("text", "is_name", "parent", "depth"),
    [
        ("root", True, None, 1),
        ("team-a", True, None, 1),
        ("system:admin", True, "system", 2),
        ("root:org", False, "root", 2),
        ("root:org:team", False, "root:org", 3),
        ("2cynbfy2m0wtjqcs:child", False, "2cynbfy2m0wtjqcs", 2),
    ],
)
def test_path_parts(text: str, is_name: bool, parent: str | None, depth: int) -> None:
    assert paths.is_name(text) is is_name
    assert paths.parent_of(text) == parent
    assert paths.depth(text) == depth


def test_depth_limit() -> None:
    paths.check_depth(":".join(["root"] * paths.MAX_DEPTH))
    with pytest.raises(Exception, match="deeper than the limit of 16 segments") as too_deep:
        paths.check_depth(":".join(["root"] * (paths.MAX_DEPTH + 1)))
    assert getattr(too_deep.value, "code", None) == 400


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("root:org:..", "root"),
        ("root:org:.:team", "root:org:team"),
        ("root:a:..:b:..:c", "root:c"),
        ("root:..", ""),
    ],
)
def test_resolve_dots(path: str, resolved: str) -> None:
    assert ws.resolve_dots(path) == resolved


def test_resolve_dots_cannot_leave_the_top() -> None:
    with pytest.raises(ws.PluginError, match="cannot go up from root"):
        ws.resolve_dots("root:..:..")


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("https://h:6443/clusters/root", ("https://h:6443", "root")),
        ("https://h:6443/clusters/root:org/", ("https://h:6443", "root:org")),
        ("https://h/prefix/clusters/root:a:b/api", ("https://h/prefix", "root:a:b")),
        ("https://h:6443", None),
        ("https://h:6443/clusters/Bad_Name", None),
    ],
)
def test_parse_cluster_url(url: str, parsed: tuple[str, str] | None) -> None:
    assert ws.parse_cluster_url(url) == parsed


def _config(path: Path, server: str) -> None:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "root", "cluster": {"server": server}}],
                "users": [{"name": "admin", "user": {"token": "t"}}],
                "contexts": [{"name": "root", "context": {"cluster": "root", "user": "admin"}}],
                "current-context": "root",
            }
        )
    )


def _servers(path: Path) -> dict[str, str]:
    data = yaml.safe_load(path.read_text())
    clusters = {c["name"]: c["cluster"]["server"] for c in data["clusters"]}
    return {c["name"]: clusters[c["context"]["cluster"]] for c in data["contexts"]}


def test_commit_and_swap_edit_the_kubeconfig_as_kcp(tmp_path: Path) -> None:
    path = tmp_path / "config"
    _config(path, "https://h/clusters/root")
    config = ws.Kubeconfig(path, None)
    config.commit("https://h/clusters/root:a")
    assert _servers(path) == {
        "root": "https://h/clusters/root",
        ws.CURRENT: "https://h/clusters/root:a",
        ws.PREVIOUS: "https://h/clusters/root",
    }
    config = ws.Kubeconfig(path, None)
    config.commit("https://h/clusters/root:a:b")
    assert _servers(path)[ws.CURRENT] == "https://h/clusters/root:a:b"
    assert _servers(path)[ws.PREVIOUS] == "https://h/clusters/root:a"
    assert ws.Kubeconfig(path, None).swap() == "https://h/clusters/root:a"
    assert _servers(path)[ws.PREVIOUS] == "https://h/clusters/root:a:b"
    assert ws.Kubeconfig(path, None).swap() == "https://h/clusters/root:a:b"
    data = yaml.safe_load(path.read_text())
    assert data["current-context"] == ws.CURRENT
    assert {u["name"] for u in data["users"]} == {"admin"}  # credentials untouched
