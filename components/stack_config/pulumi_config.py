"""This stack's configuration read from Pulumi: the one module of ``stack_config`` that imports
``pulumi``, so the parser and the settings (which the test bed and the benchmarks read too) stay
free of the Pulumi SDK."""

import pulumi

from components.kubernetes_versions import plugin_kubernetes_version
from components.stack_config.stack import StackConfig, parse_stack_config
from components.stack_config.validation import PROJECT


def load_stack_config() -> StackConfig:
    """Read this stack's configuration from Pulumi, once, and validate it.

    The language host lists the encrypted keys in ``PULUMI_CONFIG_SECRET_KEYS``; a key set
    with ``pulumi config set --secret --path`` inside an object marks the whole object.
    """
    prefix = f"{PROJECT}:"
    every = {**pulumi.runtime.config.get_config_env(), **pulumi.runtime.config.CONFIG.get()}
    values = {key.removeprefix(prefix): str(value) for key, value in every.items() if key.startswith(prefix)}
    secret = set(pulumi.runtime.config.get_config_secret_keys_env())
    secret |= {key for key in every if pulumi.runtime.config.is_config_secret(key)}
    return parse_stack_config(
        values,
        stack=pulumi.get_stack(),
        plugin_version=plugin_kubernetes_version(),
        secret_keys=frozenset(key.removeprefix(prefix) for key in secret if key.startswith(prefix)),
    )
