"""Reading the live cluster: the only module of the tool that talks to the API server.

Objects come back as the API serves them (decoded JSON, camelCase keys, quantities as
strings), which is the form the policy reads, so nothing is lost by the client's models.
Needs ``get`` on pods and on batch Jobs (an Indexed Job's size), ``list`` on nodes and on pods
in all namespaces, and, for a same-zone job whose members mount PersistentVolumeClaims, ``get``
on those claims and on PersistentVolumes (the volumes' zones).
"""

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes.client
import kubernetes.config
import urllib3.exceptions
from kubernetes.client.rest import ApiException

from explain.errors import ExplainError
from explain.settings import LIST_PAGE_SIZE, REQUEST_TIMEOUT_SECONDS

ApiObject = dict[str, Any]
"""A Kubernetes object as the API server's JSON (raw, the form the policy reads)."""

ASSIGNED_ACTIVE_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
"""Pods bound to a node and not terminal: what the scheduler counts as using the node."""
UNBOUND_PENDING_PODS = "spec.nodeName=,status.phase=Pending"
"""Pods not bound to a node: those with a nominated node are held at Permit or preempting."""


@dataclass(frozen=True)
class ClusterState:
    """What one explanation reads: every node and every non-terminal pod bound to a node."""

    nodes: tuple[ApiObject, ...]
    assigned_pods: tuple[ApiObject, ...]
    nominated_pods: tuple[ApiObject, ...] = ()
    """Pods not bound with a nominated node (held at Permit, or preempting)."""


def api_client(kubeconfig: str | None, context: str | None) -> kubernetes.client.ApiClient:
    """A client from a kubeconfig (None: $KUBECONFIG, else ~/.kube/config) and context."""
    try:
        return kubernetes.config.new_client_from_config(config_file=kubeconfig, context=context)
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError) as error:
        where = kubeconfig or "$KUBECONFIG or ~/.kube/config"
        raise ExplainError(f"--kubeconfig {where}: cannot load it: {error}") from error


class ClusterReader:
    """Reads pods and nodes as raw API JSON, each request bounded by ``timeout`` seconds."""

    def __init__(self, api: kubernetes.client.ApiClient, timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        self._core = kubernetes.client.CoreV1Api(api)
        self._batch = kubernetes.client.BatchV1Api(api)
        self._timeout = timeout
        self._server = api.configuration.host

    def pod(self, namespace: str, name: str) -> ApiObject:
        """The pod; ExplainError when it does not exist or cannot be read."""
        return self._call(
            f"pod {namespace}/{name}",
            lambda: self._core.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=self._timeout
            ),
        )

    def job(self, namespace: str, name: str) -> ApiObject | None:
        """The batch/v1 Job, None when there is none; ExplainError when it cannot be read."""
        return self._optional(
            f"job {namespace}/{name}",
            lambda: self._batch.read_namespaced_job(
                name, namespace, _preload_content=False, _request_timeout=self._timeout
            ),
        )

    def claim(self, namespace: str, name: str) -> ApiObject | None:
        """The PersistentVolumeClaim, None when there is none; ExplainError when it cannot be read."""
        return self._optional(
            f"persistentvolumeclaim {namespace}/{name}",
            lambda: self._core.read_namespaced_persistent_volume_claim(
                name, namespace, _preload_content=False, _request_timeout=self._timeout
            ),
        )

    def volume(self, name: str) -> ApiObject | None:
        """The PersistentVolume, None when there is none; ExplainError when it cannot be read."""
        return self._optional(
            f"persistentvolume {name}",
            lambda: self._core.read_persistent_volume(
                name, _preload_content=False, _request_timeout=self._timeout
            ),
        )

    def _optional(self, what: str, request: Callable[[], Any]) -> ApiObject | None:
        """One object, None when the API server says it does not exist."""
        try:
            response = request()
        except ApiException as error:
            if error.status == 404:
                return None
            raise ExplainError(f"{what}: {_api_error_reason(error)} ({self._server})") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ExplainError(f"{what}: cannot reach the API server {self._server}: {error}") from error
        document = json.loads(response.data)
        return document if isinstance(document, dict) else None

    def pods_selected(self, namespace: str, match_labels: Mapping[str, str]) -> tuple[ApiObject, ...]:
        """The namespace's pods carrying every label of ``match_labels`` (a same-zone job's members)."""
        selector = ",".join(f"{key}={value}" for key, value in sorted(match_labels.items()))
        return tuple(
            self._list(
                f"pods {selector} in {namespace}",
                functools.partial(self._core.list_namespaced_pod, namespace),
                label_selector=selector,
            )
        )

    def state(self) -> ClusterState:
        """Every node, every non-terminal pod bound to one, and every pending pod with a nominated node."""
        nodes = tuple(self._list("nodes", self._core.list_node))
        pods = tuple(
            self._list(
                "pods",
                self._core.list_pod_for_all_namespaces,
                field_selector=ASSIGNED_ACTIVE_PODS,
            )
        )
        pending = self._list(
            "pods", self._core.list_pod_for_all_namespaces, field_selector=UNBOUND_PENDING_PODS
        )
        nominated = tuple(pod for pod in pending if (pod.get("status") or {}).get("nominatedNodeName"))
        return ClusterState(nodes=nodes, assigned_pods=pods, nominated_pods=nominated)

    def _list(self, what: str, verb: Callable[..., Any], **query: Any) -> Iterator[ApiObject]:
        """Every item of a paged list."""
        token = None
        while True:
            request = functools.partial(
                verb,
                limit=LIST_PAGE_SIZE,
                _continue=token,
                _preload_content=False,
                _request_timeout=self._timeout,
                **query,
            )
            page = self._call(what, request)
            yield from page.get("items") or ()
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def _call(self, what: str, request: Callable[[], Any]) -> ApiObject:
        try:
            response = request()
            document = json.loads(response.data)
        except ApiException as error:
            raise ExplainError(f"{what}: {_api_error_reason(error)} ({self._server})") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ExplainError(f"{what}: cannot reach the API server {self._server}: {error}") from error
        if not isinstance(document, dict):
            raise ExplainError(f"{what}: the API server answered something other than an object")
        return document


def _api_error_reason(error: ApiException) -> str:
    """'not found', or the status and the API server's own message (e.g. RBAC's 'forbidden: ...')."""
    if error.status == 404:
        return "not found"
    try:
        message = json.loads(error.body or "{}").get("message", "")
    except (ValueError, AttributeError):
        message = ""
    return f"{error.status} {error.reason}" + (f": {message}" if message else "")
