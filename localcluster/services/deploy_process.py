"""``python -m localcluster.services.deploy_process``: one local-stack deployment in a fresh interpreter.

The parent (``pulumi_stack.deploy_in_fresh_process``) writes the pickled arguments to stdin; this
process deploys and writes back one pickled ``("summary", DeploySummary)`` or ``("error",
exception)`` on stdout. Anything else the deployment prints goes to stderr, so stdout carries the
answer only. Both sides are this repository's own code, so pickle is the simplest faithful format.
"""

import os
import pickle
import sys

from localcluster.services.pulumi_stack import deploy_and_summarise


def main() -> int:
    answer_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the answer
    base_dir, kubeconfig, certificates, settings, stack_file = pickle.loads(sys.stdin.buffer.read())  # noqa: S301
    try:
        answer: tuple[str, object] = (
            "summary",
            deploy_and_summarise(base_dir, kubeconfig, certificates, settings, stack_file),
        )
    except Exception as error:
        answer = ("error", error)
    with os.fdopen(answer_fd, "wb") as out:
        try:
            out.write(pickle.dumps(answer))
        except (pickle.PicklingError, TypeError, AttributeError):
            out.write(pickle.dumps(("error", RuntimeError(repr(answer[1])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
