"""The disk under the layer store: sprout's own btrfs store filesystem on a loop image
and which stores use it, per-sandbox quotas, the bytes a tree owns when extents are
shared, and plain file operations (placing, copying, removing trees). Its modules are
imported directly; `sprout.sandbox` is the API."""
