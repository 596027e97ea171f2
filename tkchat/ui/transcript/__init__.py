"""The transcript: the conversation on screen, one read-only Text widget written only from the
main thread (:mod:`.transcript`); what it knows of each message (:mod:`.message_views`); the
markdown painter that turns a finished block into rich text in slices (:mod:`.markdown_view`,
:mod:`.markdown_looks`); which answers are rich (:mod:`.paint_zone`); the reader's view held
through every change (:mod:`.view_keeper`); the figures line under an answer
(:mod:`.answer_figures`)."""
