"""The README is a front door: at most 15,000 bytes, a contents list near the top whose links reach
its headings, links that reach their files and headings, and a deploy quick start whose make targets
and context keys exist. (tests/e2e/test_readme_tour.py runs the quick starts that can run locally.)"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MOST_BYTES = 15_000
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# The schedules-as-code guide comes with `sundial apply`: its link is checked once the file is there.
COMES_WITH_ITS_COMMAND = {"docs/schedules-as-code.md"}


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            slug = _slug(match[1])
            seen = counts.get(slug, 0)
            counts[slug] = seen + 1
            anchors.add(slug if seen == 0 else f"{slug}-{seen}")
    return anchors


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return [link for link in LINK.findall(text) if "://" not in link and not link.startswith("mailto:")]


def _broken(path: Path) -> list[str]:
    broken = []
    for link in _links(path):
        target, _, anchor = link.partition("#")
        file = path if not target else (path.parent / target).resolve()
        if not file.exists() and target not in COMES_WITH_ITS_COMMAND:
            broken.append(f"{link}: no file {file}")
        elif file.exists() and anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{link}: no heading #{anchor} in {file.name}")
    return broken


def _block(heading: str) -> str:
    section = README.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, heading
    return blocks[0]


def test_the_readme_is_at_most_15000_bytes() -> None:
    size = len(README.read_bytes())
    assert size <= MOST_BYTES, f"README.md is {size} bytes; move detail to docs/"


def test_a_contents_list_near_the_top_reaches_every_section() -> None:
    text = README.read_text()
    assert text.index("\n## Contents\n") < 2000, "the contents list is not near the top"
    contents = text.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)$", contents, flags=re.MULTILINE)
    sections = [_slug(h) for h in re.findall(r"^## (.+)$", text, flags=re.MULTILINE) if h != "Contents"]
    assert entries == sections, "the contents list must name every section, in order"
    assert set(entries) <= _anchors(README)


def test_the_readme_shows_the_two_make_commands() -> None:
    text = README.read_text()
    assert "make local" in text and "make test" in text


def test_every_link_of_the_readme_reaches_its_file_and_heading() -> None:
    assert _broken(README) == []


def test_no_doc_points_at_a_readme_heading_that_is_gone() -> None:
    anchors = _anchors(README)
    stale = [
        f"{path.name}: {link}"
        for path in sorted(DOCS.glob("*.md"))
        for link in _links(path)
        if link.partition("#")[0].endswith("README.md") and link.partition("#")[2] not in anchors | {""}
    ]
    assert stale == []


def test_the_guides_the_readme_sends_readers_to_have_working_links() -> None:
    for name in ("guide.md", "deploy.md", "benchmarks.md", "operations.md", "api.md"):
        assert _broken(DOCS / name) == [], name


def test_the_deploy_quick_start_names_make_targets_that_exist() -> None:
    block = _block("Quick start: deploy, in five")
    calls = re.findall(r"^make (\S+)(.*?)(?:\s+#.*)?$", block, flags=re.MULTILINE)
    assert {target for target, _ in calls} >= {"install", "deploy"}
    for target, arguments in calls:
        dry = subprocess.run(
            ["bash", "-c", f"make -n {target}{arguments}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert dry.returncode == 0, f"make -n {target}: {dry.stderr}"
    # `npx --no-install` runs the CDK CLI that `make install` put in node_modules (package.json).
    assert '"aws-cdk"' in (ROOT / "package.json").read_text()
    assert "npx --no-install cdk bootstrap" in block


def test_the_deploy_quick_start_uses_context_keys_the_cdk_app_reads() -> None:
    settings = (ROOT / "infra" / "settings.py").read_text()
    capacity = (ROOT / "infra" / "capacity_settings.py").read_text()
    known = {f"sundial:{name}" for name in re.findall(r'PREFIX \+ "(\w+)"', settings)}
    known |= set(re.findall(r'"(sundial:\w+)"', capacity))
    used = set(re.findall(r"sundial:\w+", _block("Quick start: deploy, in five")))
    assert used and used <= known, sorted(used - known)
    assert "sundial:stage" in used and "sundial:alarmEmail" in used
    # Every key the README names anywhere, and every key of the deploy guide, is one the app reads.
    everywhere = set(re.findall(r"sundial:[a-z]\w+", README.read_text() + (DOCS / "deploy.md").read_text()))
    assert everywhere <= known, sorted(everywhere - known)


def test_the_deploy_quick_start_reaches_its_stage_by_the_stack_name_the_app_gives() -> None:
    block = _block("Quick start: deploy, in five")
    stage = re.search(r"sundial:stage=(\S+?)[\s\"]", block)
    assert stage is not None
    assert f"--stack Sundial-{stage[1]}" in block
    assert 'BASE_STACK_NAME = "Sundial"' in (ROOT / "infra" / "settings.py").read_text()
