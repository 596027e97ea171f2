"""Teaching: the lessons shown beside the chat, and the tools that demonstrate them."""
