"""Access control: the SPEC §10 matrix, predicates and authentication."""
