"""Messages: idempotent appends and pages, the conversation tree, search, resume records
and a conversation's lifecycle (start over, compaction, the model's window)."""
