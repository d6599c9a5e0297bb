"""Access control: the access matrix, predicates and authentication."""
