"""The database: the engine and its drivers, the tables, row ↔ record mappings, prepared
statements and migrations."""
