"""quillsite: the blog, built into static HTML."""

from quillsite.posts import Post, PostError, load_posts, parse_post
from quillsite.search import keywords
from quillsite.site import build, plan_pages
from quillsite.slugs import slugify

__all__ = [
    "Post",
    "PostError",
    "build",
    "keywords",
    "load_posts",
    "parse_post",
    "plan_pages",
    "slugify",
]
