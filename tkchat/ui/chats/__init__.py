"""Chats in the window: the sidebar, saved conversations, versions and branches, export, the
context meter and the draft's token count."""
