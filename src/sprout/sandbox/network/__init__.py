"""A sandbox's network: the policy a task names (`none`, `public`, an allow-list), the
namespace each sandbox holds for its life under that policy, and the allow-list's own DNS
resolver. Its modules are imported directly; `sprout.sandbox` is the API."""
