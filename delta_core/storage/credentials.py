"""Which storage options are credentials, and options with them taken out.

A ``Storage`` is pickled into every Spark task payload (it travels to executors with the file
paths). Secrets must not travel that way: a pickled payload sits in Spark's task queue, in
event logs and, over Spark Connect, in the plan sent to the server. ``without_credentials``
is what a pickled store keeps; the executor's filesystem then finds its credentials the way
the filesystem library does on its own (for s3fs/botocore: ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` in the executor's environment, a profile,
or the instance's role).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# fsspec option names holding secrets: s3fs (key, secret, token, and botocore's names under
# client_kwargs), gcsfs (token), adlfs (account_key, sas_token, client_secret), HTTP (password),
# and anything whose name says so; the same words as Spark's default spark.redaction.regex.
_CREDENTIAL_NAME = re.compile(
    r"(?i)^(key|secret|token|password|credentials?|account_key)$|secret|password|token|access_?key|private_?key")


def is_credential(name: str) -> bool:
    """Whether the storage option ``name`` holds a credential."""
    return _CREDENTIAL_NAME.search(name) is not None


def without_credentials(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` minus every credential, nested mappings (``client_kwargs``) included."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if is_credential(name):
            continue
        out[name] = without_credentials(value) if isinstance(value, Mapping) else value
    return out
