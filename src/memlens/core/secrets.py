"""Secrets never enter the configuration: what looks like a key is refused wherever it was given.

A key lives in an environment variable; the configuration holds only that variable's *name*
(``api_key_env``). :func:`find_secrets` walks a configuration (plain containers) and names every
place where a value looks like a secret:

* a value under a key named like a secret (``api_key``, ``hf_token``, ``password``, ``client_secret``...),
* a string shaped like a known key (``sk-...``, ``hf_...``, ``ghp_...``, ``AKIA...``, ``AIza...``,
  ``xoxb-...``, ``glpat-...``, a JWT, ``Bearer ...``) anywhere, also inside a URL or a command line,
* a URL with a password (``https://user:secret@host``),
* the value of an environment variable named like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``...),
* an ``*_env`` value that is not a variable name (``[A-Za-z_][A-Za-z0-9_]*``) or looks like a key itself.

:func:`check_no_secrets` raises one :class:`~memlens.core.errors.ConfigError` naming the config keys
(never the values). It runs twice: when DVC composes ``params.yaml`` (the OmegaConf resolver
:data:`RESOLVER`, registered by the Hydra plugin ``hydra_plugins/memlens_secrets`` and by
:func:`register`, is the value of ``secrets_checked`` in ``conf/config.yaml``: a refused ``-S``
override fails the composition, so ``params.yaml``, ``dvc.lock`` and the experiment refs are never
written), and in :func:`memlens.core.compose.validate_config` for every stage and command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from memlens.core.errors import ConfigError

#: the OmegaConf resolver that checks the whole configuration (``${memlens_no_secrets:}``)
RESOLVER = "memlens_no_secrets"
#: the config key whose value is that check (``true`` once it passed)
CHECK_KEY = "secrets_checked"

#: a key named like a secret (its value is refused unless null or empty)
SECRET_KEY = re.compile(
    r"(^|_)(api_?key|apikey|secret|secret_key|password|passwd|token|access_token|auth_token|credentials?|bearer)$",
    re.IGNORECASE,
)
#: an environment variable named like a secret (its value must not appear in the config)
SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL", re.IGNORECASE)
#: shapes of provider keys
KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-[A-Za-z0-9_\-]{16,}|sk_(live|test)_[A-Za-z0-9]{16,}|rk_(live|test)_[A-Za-z0-9]{16,}"
    r"|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abpors]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_\-]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+"
    r"|[Bb]earer\s+[A-Za-z0-9._\-]{12,}"
    r")"
)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def looks_like_key(text: str) -> bool:
    """A string shaped like an API key or a bearer token."""
    return bool(KEY_SHAPES.search(text))


def not_a_variable_name(value: str) -> str | None:
    """Why ``value`` cannot be the *name* of an environment variable (None when it can be one)."""
    if not ENV_NAME.fullmatch(value):
        return "is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
    if len(value) > 64 or looks_like_key(value) or _random_token(value):
        return "looks like a key, not the name of the variable holding it"
    return None


def _random_token(value: str) -> bool:
    """Letters and digits mixed, no separator, 20+ characters: a key, not a variable name."""
    return len(value) >= 20 and "_" not in value and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if SECRET_ENV.search(k) and len(v) >= 8 and not v.isdigit()]


def _string_problem(key: str, value: str, env_values: list[str]) -> str | None:
    if key.endswith("_env") and value:
        why = not_a_variable_name(value)
        if why:
            return why
    if SECRET_KEY.search(key) and value.strip() and not key.endswith("_env"):
        return "is not accepted: a secret"
    if looks_like_key(value):
        return "looks like an API key"
    if "://" in value:
        try:
            if urlsplit(value).password:
                return "a URL with a password"
        except ValueError:
            pass
    if any(s in value for s in env_values):
        return "holds the value of a secret environment variable"
    return None


def _secret_option(arg: Any) -> bool:
    """A command-line option named like a secret (``--api-key``), whose value follows it."""
    return isinstance(arg, str) and arg.startswith("-") and bool(SECRET_KEY.search(arg.lstrip("-").replace("-", "_")))


def find_secrets(data: Any, prefix: str = "") -> list[str]:
    """``"key.path (why)"`` for every place in ``data`` that holds something that looks like a secret."""
    env_values = _env_secrets()
    out: list[str] = []

    def walk(obj: Any, path: str, key: str) -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                if str(k) == CHECK_KEY:
                    continue
                walk(v, f"{path}.{k}" if path else str(k), str(k))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                prev = obj[i - 1] if i else None
                if _secret_option(prev) and isinstance(v, str) and v and not v.startswith("$"):
                    out.append(f"{path}[{i}] is not accepted: the value of {prev}, a secret")
                    continue
                walk(v, f"{path}[{i}]", key)
        elif isinstance(obj, str):
            why = _string_problem(key, obj, env_values)
            if why:
                out.append(f"{path} {why}" if why.startswith("is ") else f"{path} ({why})")
        elif obj is not None and SECRET_KEY.search(key) and not key.endswith("_env") and not isinstance(obj, bool):
            out.append(f"{path} is not accepted: a secret")

    walk(data, prefix, prefix.rsplit(".", 1)[-1])
    return out


def check_no_secrets(data: Any, where: str = "the configuration") -> None:
    """Raise :class:`ConfigError` naming every key of ``data`` that holds something like a secret."""
    found = find_secrets(data)
    if found:
        section = found[0].split(".", 1)[0].split("[", 1)[0] if "." in found[0] else ""
        env_key = f"{section}.api_key_env" if section else "api_key_env"
        raise ConfigError(
            "; ".join(found[:8])
            + (f"; ... and {len(found) - 8} more" if len(found) > 8 else "")
            + f": {where} refuses it (it would be written to params.yaml, dvc.lock, the experiment refs and "
            f"MLflow); put the key in an environment variable and name the variable in {env_key}"
        )


def _resolve_check(*, _root_: Any) -> bool:
    from omegaconf import OmegaConf

    check_no_secrets(OmegaConf.to_container(_root_, resolve=False))
    return True


def register() -> None:
    """Register the OmegaConf resolver :data:`RESOLVER` (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, _resolve_check)
