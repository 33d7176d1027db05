"""The Lambda requirements take their versions from constraints.txt, the one list of tested versions.

`make pins` rewrites each `name==version` line of sundial/functions/requirements.txt with the version
constraints.txt holds for that name; the names and comments stay. A test checks the two agree, so a
version bumped in one place only fails before it deploys.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
REQUIREMENTS = ROOT / "sundial" / "functions" / "requirements.txt"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?==(?P<version>\S+)\s*$")


def canonical(name: str) -> str:
    """A distribution's name as the registry compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    """Each `name==version` line of a requirements or constraints text, by canonical name."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[canonical(match["name"])] = match["version"]
    return found


def repinned(requirements: str, constraints: dict[str, str]) -> str:
    """`requirements` with every pin set to the constraints' version. Raises KeyError naming a
    requirement that constraints.txt does not pin: the Lambda would run something never tested."""
    lines = []
    for line in requirements.splitlines():
        match = _PIN.match(line.strip())
        if not match:
            lines.append(line)
            continue
        name = canonical(match["name"])
        if name not in constraints:
            raise KeyError(f"{match['name']} is not pinned in constraints.txt")
        lines.append(f"{match['name']}{match['extras'] or ''}=={constraints[name]}")
    return "\n".join(lines) + "\n"


def main() -> int:
    updated = repinned(REQUIREMENTS.read_text(), pins(CONSTRAINTS.read_text()))
    if updated != REQUIREMENTS.read_text():
        REQUIREMENTS.write_text(updated)
        print(f"updated {REQUIREMENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
