"""The static token file and ServiceAccount JWTs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from minikcp.auth import service_accounts, token_file
from minikcp.registry import rbac_policy, token_requests


def test_token_file_format() -> None:
    tokens = token_file.parse(
        'abc,alice,uid-1,"dev,ops"\n\ndef, bob ,uid-2\n,nobody,uid-3\nabc,alice2,uid-4,"  qa , "\n',
        source="tokens.csv",
    )
    assert set(tokens) == {"abc", "def"}
    assert tokens["abc"].name == "alice2"  # the last line of a repeated token wins
    assert tokens["abc"].groups == ("qa", "system:authenticated")
    assert tokens["abc"].uid == "uid-4"
    # leading spaces go (Go's csv TrimLeadingSpace), trailing ones stay
    assert (tokens["def"].name, tokens["def"].groups) == ("bob ", ("system:authenticated",))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "abc,alice\n",
            "token file 'f' must have at least 3 columns (token, user name, user uid), found 2",
        ),
        ('abc,"alice,uid\n', "token file 'f'"),
    ],
)
def test_token_file_errors(text: str, message: str) -> None:
    with pytest.raises(token_file.TokenFileError) as failed:
        token_file.parse(text, source="f")
    assert str(failed.value).startswith(message)


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {
        "aud": [token_requests.ISSUER],
        "exp": now + 600,
        "iat": now,
        "nbf": now,
        "iss": token_requests.ISSUER,
        "jti": "j-1",
        "kubernetes.io": {"namespace": "team", "serviceaccount": {"name": "bot", "uid": "u-1"}},
        "sub": "system:serviceaccount:team:bot",
        token_requests.CLUSTER_CLAIM: "root:org",
    }
    claims.update(changes)
    return claims


def test_service_account_tokens(tmp_path: Path) -> None:
    key = service_accounts.SigningKey.load_or_create(tmp_path)
    assert (tmp_path / "sa.key").stat().st_mode & 0o777 == 0o600
    verifier = service_accounts.TokenVerifier(
        key, issuer=token_requests.ISSUER, audiences=(token_requests.ISSUER,)
    )
    user = verifier.authenticate(key.sign(_claims()))
    assert user is not None
    assert user.name == "system:serviceaccount:team:bot"
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:team",
        "system:authenticated",
    )
    assert user.uid == "u-1"
    assert user.extra[rbac_policy.CLUSTER_NAME_EXTRA] == ("root:org",)
    # the same key after a restart
    again = service_accounts.SigningKey.load_or_create(tmp_path)
    assert again.claims(key.sign(_claims())) is not None
    (tmp_path / "other").mkdir()
    other = service_accounts.SigningKey.load_or_create(tmp_path / "other")
    refused = [
        key.sign(_claims(exp=int(time.time()) - 3600)),
        key.sign(_claims(nbf=int(time.time()) + 3600)),
        key.sign(_claims(iss="https://elsewhere")),
        key.sign(_claims(aud=["other-audience"])),
        key.sign(_claims(sub="system:serviceaccount:team:somebody-else")),
        key.sign({k: v for k, v in _claims().items() if k != token_requests.CLUSTER_CLAIM}),
        other.sign(_claims()),
        "a.b.c",
        "not a token",
    ]
    for token in refused:
        assert verifier.authenticate(token) is None, token
