"""Every stack key, key value, stack output and make target the docs name exists in the code.

The names are read from the pages as a reader meets them: a stack key is a backticked path whose
first segment is a top-level key (`webhook.invalidAnnotation`), or such a path with a value
(`webhook.invalidAnnotation: warn`; the value is checked by the parser itself), or the key of a
`pulumi config set`; an output is what `pulumi stack output` reads and what the deploy guide's
"Outputs:" paragraph lists; a make target is a backticked `make NAME`. The keys come from the
parser (``code_keys``), the outputs from ``components/stack.py``, the targets from the Makefile.
A planted wrong name in a copy of a page shows that each check can fail.
"""

import functools
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from components.stack_config import StackConfigError
from components.stack_config.images import ECR_IMAGE_KEYS
from components.stack_config.stack import EKS_ONLY_KEYS
from tests.components.stack_config.test_configuration_docs import LIST_OF, code_keys, nest, parse

REPO = Path(__file__).resolve().parents[3]
PAGES = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").rglob("*.md")])
BACKTICKED = re.compile(r"`([^`\n]+)`")
KEY_PATH = r"[A-Za-z]\w*(?:\[\d*\])?(?:\.[A-Za-z]\w*(?:\[\d*\])?)*"
"""A stack key as the docs write it: dotted segments, a list segment with ``[]`` or ``[0]``."""
KEY = re.compile(rf"^{KEY_PATH}$")
KEY_VALUE = re.compile(rf"^(?P<key>{KEY_PATH}): (?P<value>\S.*)$")
CONFIG_SET = re.compile(r"pulumi config set (?:--secret |--path )*(?P<key>[A-Za-z][\w.\[\]:]*)")
STACK_OUTPUT = re.compile(r"pulumi stack output (?P<name>[A-Za-z]\w*)")
FILE_NAME = re.compile(r"\.(py|md|yaml|json|go|txt)$")
REFUSED_ON_PURPOSE = {"scheduler.extenderWeight: 0"}
"""Values the docs name as examples of a configuration the stack refuses."""
MAKE_TARGET = re.compile(r"`make (?P<target>[a-z][\w-]*)")
OUTPUTS_PARAGRAPH = re.compile(r"^Outputs: (?P<text>.*?)\n\n", flags=re.DOTALL | re.MULTILINE)
REFUSED_SENTENCE = re.compile(r"The keys that describe what the stack creates on AWS \((?P<keys>[^)]*)\)")


@functools.cache
def stack_keys() -> tuple[frozenset[str], frozenset[str]]:
    """Every key path the parser reads (``[]`` left out of list segments), and the leaves."""
    nodes, leaves = code_keys()
    return (
        frozenset(path.replace(LIST_OF, "") for path in nodes),
        frozenset(path.replace(LIST_OF, "") for path in leaves),
    )


def top_level_keys() -> set[str]:
    return {path.split(".")[0] for path in stack_keys()[0]}


def normalised(path: str) -> str:
    """``gpuNodeGroups[0].name`` -> ``gpuNodeGroups.name``."""
    return re.sub(r"\[\d*\]", "", path)


def full_path(key: str) -> str | None:
    """The key as the parser knows it: itself, or the one leaf whose last segment it is."""
    if normalised(key) in stack_keys()[0]:
        return normalised(key)
    matches = [leaf for leaf in stack_keys()[1] if leaf.split(".")[-1] == key]
    return matches[0] if len(matches) == 1 else None


def value_refused(path: str, value: object) -> bool:
    """Whether the parser refuses ``value`` at ``path`` where it accepts the key otherwise (the
    documented default, or no other error): a refusal that names the key."""
    if "." not in path and path not in stack_keys()[1]:
        return False
    values = nest(path.split("."), value)
    try:
        parse({key: raw if isinstance(raw, str) else json.dumps(raw) for key, raw in values.items()})
    except StackConfigError as error:
        return str(error).startswith(f"gpu-scheduler-eks:{path}:") or (
            path.rsplit(".", maxsplit=1)[-1] in str(error).split(":")[1] and "is not valid" in str(error)
        )
    return False


def unknown_keys(text: str) -> list[str]:
    """The stack keys (with their values) ``text`` names that the parser does not have or refuses."""
    tops = top_level_keys()
    wrong = []
    for token in BACKTICKED.findall(text):
        key_value = KEY_VALUE.match(token)
        key = key_value.group("key") if key_value else token
        if not KEY.match(key) or FILE_NAME.search(key):
            continue
        ours = "*" not in key and key.split(".")[0].split("[")[0] in tops
        short_key_with_value = bool(key_value) and "." not in key and full_path(key) is not None
        if not ours and not short_key_with_value:
            continue
        path = full_path(key)
        if path is None:
            wrong.append(token)
        elif key_value and path in stack_keys()[1]:
            value = yaml.safe_load(key_value.group("value"))
            if isinstance(value, str | bool | int) and value_refused(path, value):
                wrong.append(token)
    for match in CONFIG_SET.finditer(text):
        key = match.group("key")
        if ":" not in key and full_path(key) is None:  # a provider's key (aws:region) is not ours
            wrong.append(match.group(0))
    return [token for token in wrong if token not in REFUSED_ON_PURPOSE]


@functools.cache
def code_outputs() -> frozenset[str]:
    """The stack outputs ``components/stack.py`` exports."""
    source = (REPO / "components" / "stack.py").read_text()
    names = set(re.findall(r'outputs\["(\w+)"\]\s*=', source))
    for block in re.findall(r"outputs=\{(.*?)\*\*outputs", source, flags=re.DOTALL):
        names |= set(re.findall(r'^\s*"(\w+)":', block, flags=re.MULTILINE))
    names.add("schedulerMode")  # the one output set in the dict literal that starts the outputs
    assert {"clusterName", "kubeconfig", "schedulerImage"} <= names, "the outputs were read"
    return frozenset(names)


def unknown_outputs(text: str) -> list[str]:
    named = [match.group("name") for match in STACK_OUTPUT.finditer(text)]
    return [name for name in named if name not in code_outputs()]


@functools.cache
def make_targets() -> frozenset[str]:
    makefile = (REPO / "Makefile").read_text()
    return frozenset(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE))


def unknown_targets(text: str) -> list[str]:
    return [m.group("target") for m in MAKE_TARGET.finditer(text) if m.group("target") not in make_targets()]


def unknown_names(text: str) -> list[str]:
    return [*unknown_keys(text), *unknown_outputs(text), *unknown_targets(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_each_name_a_page_gives_exists(page: Path) -> None:
    assert unknown_names(page.read_text()) == []


def test_the_deploy_guide_lists_exactly_the_outputs() -> None:
    text = (REPO / "docs" / "deploy-eks.md").read_text()
    match = OUTPUTS_PARAGRAPH.search(text)
    assert match is not None
    listed = {name for name in BACKTICKED.findall(match.group("text")) if name in code_outputs()}
    assert listed == set(code_outputs())


def test_the_keys_refused_on_an_existing_cluster_are_the_codes() -> None:
    text = (REPO / "docs" / "deploy-eks.md").read_text()
    match = REFUSED_SENTENCE.search(text)
    assert match is not None
    listed = set(BACKTICKED.findall(match.group("keys")))
    assert listed == {*EKS_ONLY_KEYS, *(f"images.{key}" for key in ECR_IMAGE_KEYS)}


def test_the_kubeconfig_the_guides_write_is_kept_out_of_commits() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", "kubeconfig.yaml"], cwd=REPO, check=False)
    assert ignored.returncode == 0


@pytest.mark.parametrize(
    ("planted", "found"),
    [
        ("set `webhook.invalidAnnotaton: deny`", "webhook.invalidAnnotaton: deny"),
        ("with `invalidAnnotation: allow` they", "invalidAnnotation: allow"),
        ("run `make demoo` first", "demoo"),
        ("`pulumi stack output clusterNames`", "clusterNames"),
    ],
)
def test_a_planted_wrong_name_is_found(planted: str, found: str) -> None:
    page = (REPO / "docs" / "troubleshooting.md").read_text()
    assert unknown_names(page) == []
    assert found in unknown_names(page + "\n" + planted + "\n")
