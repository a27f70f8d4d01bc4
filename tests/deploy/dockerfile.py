"""The Dockerfile read as instructions (no Docker engine runs here to build it)."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instructions(name: str) -> list[str]:
    joined = DOCKERFILE.replace("\\\n", " ")
    return re.findall(rf"^{name}\s+(.+?)\s*$", joined, flags=re.MULTILINE)


def image_user() -> str:
    """The last USER: the one the final stage runs as."""
    users = instructions("USER")
    assert users, "the Dockerfile sets no USER: the image would run as root"
    return users[-1]


def image_cmd() -> list[str]:
    return yaml.safe_load(instructions("CMD")[-1])
