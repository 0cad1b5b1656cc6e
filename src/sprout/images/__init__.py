"""The machine cache: root filesystems for sandboxes, without a container daemon, and what
else this machine keeps for them under SPROUT_CACHE.

Root filesystems are built from Debian's archive with mmdebstrap (`debian`), imported from
an OCI layout or a `docker save` tarball (`oci`), kept in one content-addressed cache per
machine (`cache`), and named by the `FROM` lines of tasks' Dockerfiles (`names`). Beside
them: tasks' base layers, built once per machine (`base_layers`), the task folders `sprout
run --ray` shipped here (`shipped_tasks`), the machine's network settings a sandbox takes
(`machine_network`), and collecting all of it (`gc`).
"""

from sprout.images.cache import ImageCache, ImageError
from sprout.images.names import ImageRequest, resolve_from
from sprout.sandbox import Image

__all__ = ["Image", "ImageCache", "ImageError", "ImageRequest", "resolve_from"]
