"""Root filesystems for sandboxes, without a container daemon.

Built from Debian's archive with mmdebstrap (`debian`), imported from an OCI
layout or a `docker save` tarball (`oci`), kept in one content-addressed cache
per machine (`cache`), and named by the `FROM` lines of tasks' Dockerfiles
(`names`).
"""

from sprout.images.cache import ImageCache, ImageError
from sprout.images.names import ImageRequest, resolve_from
from sprout.sandbox import Image

__all__ = ["Image", "ImageCache", "ImageError", "ImageRequest", "resolve_from"]
