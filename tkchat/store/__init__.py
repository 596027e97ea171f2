"""Storage: conversations that are never lost (SQLite in the user's data folder).

- :mod:`tkchat.store.files`  — where the database lives (platformdirs conventions), and a
  file tkchat cannot read moved aside.
- :mod:`tkchat.store.db`     — :class:`ConversationStore` (create, read, edit, search, export,
  import) and :func:`open_store`, which always returns a working store (on a damaged, locked,
  read-only or full database: a fallback and one warning sentence). Around it, one concern
  each: ``errors`` (:class:`StoreError`), ``records`` (:class:`Conversation`,
  :class:`StoredMessage`), ``schema`` (tables, migrations), ``search_index`` (FTS5),
  ``messages`` (reading and writing messages; a streaming answer as appended parts),
  ``variants`` (versions and branches), ``sampling_json``, ``export_format`` (Markdown/JSON
  out, JSON in), ``opening`` (connections, the fallbacks, a read-only history) and
  ``figures`` (each answer's tokens, speed, time to its first token and how it ended);
  ``messages``, ``variants``, ``export_format`` and ``figures`` each hold their part of the
  store's methods, mixed into it.
- :mod:`tkchat.store.writer` — :class:`StoreWriter`: the background thread that saves while an
  answer streams, so no write ever runs on the Tk main thread.
- :mod:`tkchat.store.settings` — :class:`AppSettings` in ``settings.json`` next to the history:
  :func:`load_settings` at start-up and :func:`save_settings` when a setting changes (both
  return a warning sentence instead of raising).

Nothing here imports Tk. Typical wiring in the window::

    store, warning = open_store()          # show `warning` in the window if it is not None
    store.mark_interrupted()               # answers cut off by a crash are marked so
    writer = StoreWriter(store, on_error=lambda msg: events.put(StorageFailed(msg)))
    ticket = writer.add_message(conv.id, "user", text, on_saved=lambda mid: events.put(...))
    answer = writer.add_message(conv.id, "assistant", "", status="streaming")
    writer.append(answer, chunk_text)      # for every coalesced chunk
    writer.finish(answer, "complete")      # or "stopped" / "error"
    writer.close(timeout=2.0)              # at exit
"""

from tkchat.store.db import ConversationStore, open_store
from tkchat.store.errors import StoreError
from tkchat.store.export_format import EXPORT_FORMAT, EXPORT_VERSION
from tkchat.store.figures import ENDINGS, AnswerFigures
from tkchat.store.files import data_dir, database_path
from tkchat.store.records import STATUSES, Conversation, Role, Status, StoredMessage
from tkchat.store.sampling_json import sampling_from_settings, settings_from_sampling
from tkchat.store.schema import SCHEMA_VERSION
from tkchat.store.settings import (
    AppSettings,
    forget_model,
    load_settings,
    remember_model,
    save_settings,
    settings_path,
)
from tkchat.store.variants import Kept, KeptVersion
from tkchat.store.writer import FLUSH_INTERVAL_S, MessageRef, MessageTicket, StoreWriter

__all__ = [
    "ENDINGS",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "FLUSH_INTERVAL_S",
    "SCHEMA_VERSION",
    "STATUSES",
    "AnswerFigures",
    "AppSettings",
    "Conversation",
    "ConversationStore",
    "Kept",
    "KeptVersion",
    "MessageRef",
    "MessageTicket",
    "Role",
    "Status",
    "StoreError",
    "StoreWriter",
    "StoredMessage",
    "data_dir",
    "database_path",
    "load_settings",
    "open_store",
    "forget_model",
    "remember_model",
    "sampling_from_settings",
    "save_settings",
    "settings_from_sampling",
    "settings_path",
]
