"""Chats: creating, naming and organising them, who may read them, their lists and live
events, usage, and keeping, moving and archiving them."""
