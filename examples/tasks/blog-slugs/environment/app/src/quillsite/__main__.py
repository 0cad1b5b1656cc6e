import sys

from quillsite.posts import PostError, load_posts
from quillsite.site import build

if len(sys.argv) != 3:
    sys.exit("usage: python3 -m quillsite POSTS_DIR OUT_DIR")
try:
    written = build(load_posts(sys.argv[1]), sys.argv[2])
except PostError as error:
    sys.exit(f"quillsite: {error}")
print(f"wrote {len(written)} files to {sys.argv[2]}")
