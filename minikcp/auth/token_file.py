"""`--token-auth-file`: kube-apiserver's static token CSV (`token,user,uid,"group1,group2"`).

As k8s.io/apiserver/pkg/authentication/token/tokenfile: at least three columns, an empty token
skipped, a repeated token replaced by its last line, the optional fourth column a comma-separated
list of groups.
"""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

from minikcp.machinery import rbac, users

logger = logging.getLogger(__name__)


class TokenFileError(ValueError):
    """The file cannot be used; the message says why, as upstream's does."""


def parse(text: str, *, source: str = "") -> dict[str, users.UserInfo]:
    tokens: dict[str, users.UserInfo] = {}
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    try:
        for line, record in enumerate(reader, start=1):
            if not record:
                continue
            if len(record) < 3:
                raise TokenFileError(
                    f"token file '{source}' must have at least 3 columns (token, user name, "
                    f"user uid), found {len(record)}"
                )
            token = record[0].strip()
            if not token:
                logger.warning("empty token has been found in token file '%s'", source)
                continue
            if token in tokens:
                logger.warning("duplicate token on line %d of token file '%s'", line, source)
            groups = []
            if len(record) >= 4:
                groups = [g.strip() for g in record[3].split(",") if g.strip()]
            tokens[token] = users.UserInfo(record[1], (*groups, rbac.AUTHENTICATED), uid=record[2])
    except csv.Error as exc:
        raise TokenFileError(f"token file '{source}': {exc}") from None
    return tokens


def load(path: Path) -> dict[str, users.UserInfo]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"cannot read token file '{path}': {exc}") from None
    return parse(text, source=str(path))
