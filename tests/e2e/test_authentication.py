"""Authentication: client certificates, static tokens and ServiceAccount tokens; bad ones are 401.

One server for the module, started with a static token file (`tenants.TOKENS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.e2e import tenants
from tests.e2e.tenants import (
    ACCESS,
    as_admin,
    new_cluster,
    request,
)
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = tenants.start_with_tokens(tmp_path_factory.mktemp("auth"))
    yield proc
    tenants.stop_cleanly(proc)


def _certificate(
    server: ServerProcess, tmp: Path, name: str, *, expired: bool = False, foreign: bool = False
) -> tuple[Path, Path]:
    """A client certificate for `name`: expired, or signed by a CA the server does not know."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if foreign:
        issuer_key = ec.generate_private_key(ec.SECP256R1())
        issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "minikcp-ca")])
    else:
        loaded = serialization.load_pem_private_key((server.root / "ca.key").read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        issuer_key = loaded
        issuer = x509.load_pem_x509_certificate((server.root / "ca.crt").read_bytes()).subject
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=2))
        .not_valid_after(end)
        .sign(issuer_key, hashes.SHA256())
    )
    cert_path, key_path = tmp / f"{name}.crt", tmp / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_bad_credentials_are_401(auth_server: ServerProcess, tmp_path: Path) -> None:
    cluster = new_cluster()
    as_admin(auth_server, cluster, "create", "namespace", "team")
    path = f"/clusters/{cluster}/api/v1/namespaces/team/configmaps"
    good = _certificate(auth_server, tmp_path, "ivy")
    expired = _certificate(auth_server, tmp_path, "old", expired=True)
    foreign = _certificate(auth_server, tmp_path, "stranger", foreign=True)
    as_admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    sa_token = as_admin(auth_server, cluster, "-n", "team", "create", "token", "bot").strip()
    header, payload, signature = sa_token.split(".")
    tampered = f"{header}.{payload}.{signature[:-4]}AAAA"
    attempts: list[dict[str, object]] = [
        {"cert": expired},
        {"cert": foreign},
        {"token": "not-a-known-token"},
        {"token": tampered},
        {"token": "a.b.c"},
        {"token": "tok-carol,carol"},
    ]
    for attempt in attempts:
        code, body = request(auth_server, "GET", path, **attempt)  # type: ignore[arg-type]
        assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized"), (
            attempt
        )
    code, body = request(auth_server, "POST", path, token="nope", body=b'{"metadata":{"name":"x"}}')
    assert code == 401
    # a good certificate works; it is just not allowed anything yet
    code, body = request(auth_server, "GET", path, cert=good)
    assert (code, body["reason"]) == (403, "Forbidden")
    # health checks need no credentials at all, everything else does
    code, body = request(auth_server, "GET", f"/clusters/{cluster}/api")
    assert code == 401
    # Nothing was written: only the namespace's root CA ConfigMap is there.
    listed = as_admin(auth_server, cluster, "-n", "team", "get", "configmaps", "-o", "name")
    assert listed == "configmap/kube-root-ca.crt\n"


def test_static_tokens(auth_server: ServerProcess) -> None:
    cluster = new_cluster()
    as_admin(auth_server, cluster, "create", "namespace", "team")
    as_admin(
        auth_server,
        cluster,
        "create",
        "clusterrolebinding",
        "ops",
        "--clusterrole",
        ACCESS,
        "--group",
        "ops",
    )
    as_admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "rolebinding",
        "audit",
        "--clusterrole=view",
        "--group=audit",
    )
    code, body = request(
        auth_server,
        "POST",
        f"/clusters/{cluster}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        token="tok-carol",
        body=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}',
    )
    assert code == 201, body
    assert body["status"] == {
        "userInfo": {
            "username": "carol",
            "uid": "uid-carol",
            "groups": ["ops", "audit", "system:authenticated"],
        }
    }
    code, body = request(
        auth_server,
        "GET",
        f"/clusters/{cluster}/api/v1/namespaces/team/configmaps",
        token="tok-carol",
    )
    assert code == 200, body
    code, body = request(
        auth_server,
        "GET",
        f"/clusters/{cluster}/api/v1/namespaces/team/configmaps",
        token="tok-dave",
    )
    assert (code, body["message"]) == (
        403,
        'configmaps is forbidden: User "dave" cannot list resource "configmaps" in API group "" '
        'in the namespace "team"',
    )


def test_service_account_tokens_with_the_python_client(auth_server: ServerProcess) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    cluster, elsewhere = new_cluster(), new_cluster()
    as_admin(auth_server, cluster, "create", "namespace", "team")
    as_admin(auth_server, cluster, "create", "namespace", "other")
    as_admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    as_admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "rolebinding",
        "bot",
        "--clusterrole=edit",
        "--serviceaccount=team:bot",
    )
    as_admin(auth_server, elsewhere, "create", "namespace", "team")

    def api(where: str, token: str) -> client.CoreV1Api:
        conf = client.Configuration()
        conf.host = f"{auth_server.base_url}/clusters/{where}"
        conf.ssl_ca_cert = str(auth_server.root / "ca.crt")
        conf.api_key = {"authorization": f"Bearer {token}"}
        return client.CoreV1Api(client.ApiClient(conf))

    admin = client.CoreV1Api(
        __import__("kubernetes").config.new_client_from_config(
            config_file=str(auth_server.kubeconfig(cluster))
        )
    )
    issued = admin.create_namespaced_service_account_token(
        "bot",
        "team",
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
    )
    assert issued.spec.expiration_seconds == 3600
    assert issued.status.expiration_timestamp is not None
    bot = api(cluster, issued.status.token)
    bot.create_namespaced_config_map(
        "team", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="made-by-bot"))
    )
    assert [c.metadata.name for c in bot.list_namespaced_config_map("team").items] == [
        "kube-root-ca.crt",
        "made-by-bot",
    ]
    # the ServiceAccount is in its own logical cluster, so it may enter it without a binding;
    # its RoleBinding covers namespace team only
    with pytest.raises(ApiException) as denied:
        bot.list_namespaced_config_map("other")
    assert denied.value.status == 403
    # elsewhere it is nobody in particular
    with pytest.raises(ApiException) as denied:
        api(elsewhere, issued.status.token).list_namespaced_config_map("team")
    assert denied.value.status == 403
    assert 'User "system:serviceaccount:team:bot"' in orjson.loads(denied.value.body)["message"]
    # the token may ask for more tokens (edit allows serviceaccounts/token), not for a short one
    with pytest.raises(ApiException) as invalid:
        bot.create_namespaced_service_account_token(
            "bot",
            "team",
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=60)
            ),
        )
    assert invalid.value.status == 422
    assert (
        "may not specify a duration less than 10 minutes"
        in orjson.loads(invalid.value.body)["message"]
    )
    with pytest.raises(ApiException) as missing:
        admin.create_namespaced_service_account_token(
            "nobody",
            "team",
            client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
        )
    assert missing.value.status == 404
    # a deleted ServiceAccount's tokens are refused, even once one of the same name is back
    admin.delete_namespaced_service_account("bot", "team")
    with pytest.raises(ApiException) as gone:
        bot.list_namespaced_config_map("team")
    assert gone.value.status == 401
    as_admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    with pytest.raises(ApiException) as gone:
        bot.list_namespaced_config_map("team")
    assert gone.value.status == 401
