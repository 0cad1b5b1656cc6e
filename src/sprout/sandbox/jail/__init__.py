"""The jail every sandbox call runs in: the `sprout-box` helper (box.c) that enters the
namespaces, drops capabilities and applies seccomp; cgroups that bind root too; the id
map of a sandbox's users; which mode this process can run; and `sprout doctor`'s probe of
what this machine gives. Its modules are imported directly; `sprout.sandbox` is the API."""
