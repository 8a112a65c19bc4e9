"""Points a release's action.yml at the image the release workflow pushed (.github/workflows/release.yml).

On main, action.yml says ``image: Dockerfile`` (the repository builds itself, on every run); a tagged release
says ``image: docker://ghcr.io/<owner>/selfix-action:<version>@sha256:<digest>``, so a workflow that uses the tag
pulls the prebuilt image (by digest: exactly the one built) and builds nothing. Only that line changes:

    python packaging/release_image.py action.yml docker://ghcr.io/OWNER/selfix-action:1.2.3@sha256:...
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_BUILD_LINE = re.compile(r"^(?P<indent>\s+)image: Dockerfile[ \t]*$", re.MULTILINE)
_IMAGE = re.compile(r"docker://ghcr\.io/[a-z0-9._-]+/[a-z0-9._-]+:[0-9A-Za-z._-]+@sha256:[0-9a-f]{64}")


class ReleaseError(Exception):
    pass


def point_at_image(text: str, image: str) -> str:
    """``text`` (an action.yml) with its one ``image: Dockerfile`` line now naming ``image``."""
    if not _IMAGE.fullmatch(image):
        raise ReleaseError(f"not an image reference pinned by digest: {image!r}")
    found = _BUILD_LINE.findall(text)
    if len(found) != 1:
        raise ReleaseError(f"expected exactly one 'image: Dockerfile' line under runs:, found {len(found)}")
    return _BUILD_LINE.sub(lambda match: f"{match['indent']}image: {image}", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action_yml", type=Path)
    parser.add_argument("image", help="docker://ghcr.io/<owner>/selfix-action:<version>@sha256:<digest>")
    args = parser.parse_args(argv)
    try:
        args.action_yml.write_text(point_at_image(args.action_yml.read_text(), args.image))
    except (OSError, ReleaseError) as exc:
        print(f"release_image: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
