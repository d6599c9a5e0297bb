"""Messages: idempotent appends and pages, the conversation tree, search, resume records,
people's feedback on answers and a conversation's lifecycle (start over, compaction, the
model's window)."""
