"""Mutable array references (`jax.Ref`): their type, primitives, and the state-discharge
pass that turns a program reading and writing refs into a functional one."""
