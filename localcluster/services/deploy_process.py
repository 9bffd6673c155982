"""``python -m localcluster.services.deploy_process``: one local-stack deployment (or destroy) in a
fresh interpreter.

The parent (``pulumi_stack.deploy_in_fresh_process`` or ``destroy_in_fresh_process``) writes the
pickled operation and its arguments to stdin; this process runs it and writes back one pickled
``("summary", its answer)`` or ``("error", exception)`` on stdout. Anything else the operation
prints goes to stderr, so stdout carries the answer only. Both sides are this repository's own
code, so pickle is the simplest faithful format.
"""

import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

from localcluster.services.pulumi_stack import deploy_and_summarise, destroy_and_remove

OPERATIONS: dict[str, Callable[..., Any]] = {"deploy": deploy_and_summarise, "destroy": destroy_and_remove}


def main() -> int:
    answer_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the answer
    operation, arguments = pickle.loads(sys.stdin.buffer.read())  # noqa: S301
    try:
        answer: tuple[str, object] = ("summary", OPERATIONS[operation](*arguments))
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
