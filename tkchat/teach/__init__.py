"""The lessons beside the chat: loading them, and quoting tkchat's live source inside them."""
