"""Benchmarks that ship with the package (fixtures included); scripts live in bench/."""
